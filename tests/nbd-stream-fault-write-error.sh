#!/usr/bin/env bash
# nbdkit's error filter fails writes: the receiver names the write, its
# offset and errno, flushes, says how far the destination is complete,
# and exits 20.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src pattern size=256M
serve dst --filter=error memory size=256M error-pwrite=ENOSPC error-pwrite-rate=10%
set +e
within 60 "$FERRY" --nbd-send="$(uri src)" 2> "$T/send.err" |
    within 60 "$FERRY" --nbd-receive="$(uri dst)" 2> "$T/err"
rc=${PIPESTATUS[1]}
set -e
assert_ferry_error 20 "$rc" "$T/err" "failed: No space left on device"
grep -qE "write at offset [0-9]+ \([0-9]+ bytes\) failed: .*; .* is complete up to offset [0-9]+ \(flushed\)" \
    "$T/err" || fail "message: $(cat "$T/err")"
