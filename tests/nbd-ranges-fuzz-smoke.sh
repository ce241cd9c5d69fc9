#!/usr/bin/env bash
# A short libFuzzer run over a ranged stream's return direction as the
# sender takes it (fuzz/nbd-ranges-fuzz.c: READY, requests, digests),
# seeded with real messages from the nbd_range_write_* functions.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fuzz.sh"

sources=(src/stream/module/nbd-ranges.c src/stream/module/blkhash.c src/common/signal-watch.c
         src/common/gsource-release.c src/common/error.c src/stream/nbd-stream-format.c
         src/stream/range-messages.c)
fuzz_build fuzz/nbd-ranges-fuzz.c "${sources[@]}"
FUZZ_OUT=seeds-writer FUZZ_SAN="-fsanitize=address -DNBD_RANGES_FUZZ_SEEDS" \
    fuzz_build fuzz/nbd-ranges-fuzz.c "${sources[@]}"
"$T/seeds-writer" "$T/seeds" || fail "cannot write the seeds"
fuzz_run -max_len=60000
