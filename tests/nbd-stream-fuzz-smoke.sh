#!/usr/bin/env bash
# A short libFuzzer run over the stream parser (fuzz/nbd-stream-fuzz.c),
# built here with clang -fsanitize=fuzzer,address,undefined, seeded with
# real streams that ferry --nbd-send writes from nbdkit exports.
. "$(dirname "$0")/lib.sh"
need clang nbdkit
: "${FERRY_SOURCE_ROOT:?}"
secs=${NBD_FUZZ_SECONDS:-8}

echo 'int LLVMFuzzerTestOneInput (const char *d, unsigned long n) { return 0; }' > "$T/probe.c"
clang -fsanitize=fuzzer,address "$T/probe.c" -o "$T/probe" 2>/dev/null ||
    skip "clang's libFuzzer runtime is missing"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$FERRY_SOURCE_ROOT/src/stream" "$FERRY_SOURCE_ROOT/fuzz/nbd-stream-fuzz.c" \
    "$FERRY_SOURCE_ROOT/src/stream/nbd-stream-format.c" -o "$T/fuzz" || fail "cannot build the fuzz target"

mkdir "$T/seeds" "$T/corpus"
seed () {  # NAME NBDKIT-ARGS...: a real stream (with $SEND_OPTIONS), fed whole and in pieces of 3
    local name=$1; shift
    nbdkit -U - "$@" --run "'$FERRY' --nbd-send=\"\$uri\" ${SEND_OPTIONS:-} > '$T/$name'" ||
        fail "seed $name"
    { printf '\007'; cat "$T/$name"; } > "$T/seeds/$name-whole"
    { printf '\002'; cat "$T/$name"; } > "$T/seeds/$name-pieces"
    rm "$T/$name"
}
seed empty null size=0
seed odd data data='1 2 3 @65535 4' size=200000
seed sparse sparse-random size=4M seed=1 percent=20
seed nodigest data data='@70000 5' size=1M
SEND_OPTIONS=--compress seed compressed pattern size=1M

if ! within $((secs + 60)) "$T/fuzz" -max_total_time="$secs" -max_len=1200000 -rss_limit_mb=1024 \
        -artifact_prefix="$T/" "$T/corpus" "$T/seeds" > "$T/log" 2>&1; then
    tail -40 "$T/log" >&2
    fail "the fuzzer found a problem (see above)"
fi
grep -E '^(Done|#[0-9]+ *DONE)' "$T/log" || tail -3 "$T/log"
