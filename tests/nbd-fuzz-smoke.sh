#!/usr/bin/env bash
# A short libFuzzer run over the NBD parser (fuzz/nbd-framing-fuzz.c),
# seeded with the captured sessions, each as-is and under the read-only
# guard.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fuzz.sh"

fuzz_build fuzz/nbd-framing-fuzz.c tests/nbd/session.c src/relay/nbd-framing.c src/common/error.c
for c in "$FERRY_SOURCE_ROOT"/tests/nbd/captures/*.nbdrec; do
    n=$(basename "$c" .nbdrec)
    { printf '\016'; cat "$c"; } > "$T/seeds/$n-whole"      # pieces of 4096
    { printf '\001'; cat "$c"; } > "$T/seeds/$n-readonly"   # read-only, byte at a time
done
fuzz_run
