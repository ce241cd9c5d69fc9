#!/usr/bin/env bash
# A destination smaller than the stream's image is refused before the
# first write, with both sizes; exit 23.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src pattern size=64M
serve dst --filter=log memory size=32M logfile="$T/dst.log"
set +e
"$FERRY" --nbd-send="$(uri src)" | "$FERRY" --nbd-receive="$(uri dst)" 2> "$T/err"
rc=${PIPESTATUS[1]}
set -e
assert_ferry_error 23 "$rc" "$T/err" "is 33554432 bytes, smaller than the stream's image of 67108864 bytes"
! grep -q ' Write ' "$T/dst.log" || fail "the receiver wrote to a destination too small"
set +e
"$FERRY" --raw --nbd-send="$(uri src)" | "$FERRY" --raw --nbd-receive="$(uri dst)" 2> "$T/err"
rc=${PIPESTATUS[1]}
set -e
assert_ferry_error 23 "$rc" "$T/err" "is 33554432 bytes, and stdin has more"
