# ferry: short libFuzzer runs in the suite (tests/*-fuzz-smoke.sh), sourced
# after lib.sh.  Targets live in fuzz/; each smoke test builds its own with
# clang -fsanitize=fuzzer,address,undefined and runs it for
# ${FERRY_FUZZ_SECONDS:-8} seconds on seeds it writes to $T/seeds.
need clang pkg-config
: "${FERRY_SOURCE_ROOT:?}" "${FERRY_BUILD_ROOT:?}"
fuzz_seconds=${FERRY_FUZZ_SECONDS:-8}

echo 'int LLVMFuzzerTestOneInput (const char *d, unsigned long n) { return 0; }' > "$T/probe.c"
clang -fsanitize=fuzzer,address "$T/probe.c" -o "$T/probe" 2>/dev/null ||
    skip "clang's libFuzzer runtime is missing"
mkdir "$T/seeds" "$T/corpus"

# Build $T/fuzz from SOURCES (relative to the source root); with
# FUZZ_OUT=NAME and FUZZ_SAN=FLAGS, $T/NAME with those sanitizer flags
# instead (a seed writer, which has its own main).
fuzz_build () {  # SOURCES...
    local san=${FUZZ_SAN:--fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined}
    local s srcs=() incs=()
    for s in "$@"; do srcs+=("$FERRY_SOURCE_ROOT/$s"); done
    for s in src/common src/relay src/transport src/stream src/stream/module tests/nbd; do
        incs+=("-I$FERRY_SOURCE_ROOT/$s")
    done
    # shellcheck disable=SC2046,SC2086
    clang -g -O1 $san -D_GNU_SOURCE -I"$FERRY_BUILD_ROOT" "${incs[@]}" \
        $(pkg-config --cflags glib-2.0 libcrypto) "${srcs[@]}" $(pkg-config --libs glib-2.0 libcrypto) \
        -o "$T/${FUZZ_OUT:-fuzz}" || fail "cannot build the fuzz target"
}

# One seed file per line of FILE, each after the settings byte SETTINGS
# (octal, for printf).
fuzz_seed_lines () {  # FILE SETTINGS
    local n=0 line
    while IFS= read -r line; do
        n=$((n + 1))
        { printf "\\$2"; printf '%s' "$line"; } > "$T/seeds/line$n-$2"
    done < "$1"
}

# Run $T/fuzz for $fuzz_seconds on $T/seeds (and EXTRA libFuzzer options);
# fails the test with the fuzzer's report if it finds a problem.
fuzz_run () {  # EXTRA...
    if ! within $((fuzz_seconds + 60)) "$T/fuzz" -max_total_time="$fuzz_seconds" \
            -rss_limit_mb=1024 -artifact_prefix="$T/" "$@" "$T/corpus" "$T/seeds" \
            > "$T/log" 2>&1; then
        tail -40 "$T/log" >&2
        fail "the fuzzer found a problem (see above)"
    fi
    grep -E '^(Done|#[0-9]+ *DONE)' "$T/log" || tail -3 "$T/log"
}
