#!/usr/bin/env bash
# A short libFuzzer run over the NBD parser (fuzz/nbd-framing-fuzz.c),
# built here with clang -fsanitize=fuzzer,address,undefined and seeded
# with the captured sessions, each as-is and under the read-only guard.
. "$(dirname "$0")/lib.sh"
need clang pkg-config
: "${FERRY_SOURCE_ROOT:?}" "${FERRY_BUILD_ROOT:?}"
secs=${NBD_FUZZ_SECONDS:-8}

echo 'int LLVMFuzzerTestOneInput (const char *d, unsigned long n) { return 0; }' > "$T/probe.c"
clang -fsanitize=fuzzer,address "$T/probe.c" -o "$T/probe" 2>/dev/null ||
    skip "clang's libFuzzer runtime is missing"

san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
# shellcheck disable=SC2046,SC2086
clang -g -O1 $san -D_GNU_SOURCE -I"$FERRY_BUILD_ROOT" -I"$FERRY_SOURCE_ROOT/src" \
    -I"$FERRY_SOURCE_ROOT/tests/nbd" $(pkg-config --cflags glib-2.0) \
    "$FERRY_SOURCE_ROOT/fuzz/nbd-framing-fuzz.c" "$FERRY_SOURCE_ROOT/tests/nbd/session.c" \
    "$FERRY_SOURCE_ROOT/src/nbd-framing.c" "$FERRY_SOURCE_ROOT/src/error.c" \
    $(pkg-config --libs glib-2.0) -o "$T/fuzz" || fail "cannot build the fuzz target"

mkdir "$T/seeds" "$T/corpus"
for c in "$FERRY_SOURCE_ROOT"/tests/nbd/captures/*.nbdrec; do
    n=$(basename "$c" .nbdrec)
    { printf '\016'; cat "$c"; } > "$T/seeds/$n-whole"      # pieces of 4096
    { printf '\001'; cat "$c"; } > "$T/seeds/$n-readonly"   # read-only, byte at a time
done

if ! within $((secs + 60)) "$T/fuzz" -max_total_time="$secs" -rss_limit_mb=1024 \
        -artifact_prefix="$T/" "$T/corpus" "$T/seeds" > "$T/log" 2>&1; then
    tail -40 "$T/log" >&2
    fail "the fuzzer found a problem (see above)"
fi
grep -E '^(Done|#[0-9]+ *DONE)' "$T/log" || tail -3 "$T/log"
