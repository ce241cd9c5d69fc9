#!/usr/bin/env bash
# A valid stream whose image is one 64 MiB DATA record (ferry's own sender
# writes records of at most 2 MiB; a stored stream or another writer may
# not): the receiver takes it a request at a time, within --in-flight,
# and DST gets every byte.  Before, the record was allocated whole: 78 MB
# of RSS at any --in-flight.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need /usr/bin/time
PEER=$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py
size=$((64 * 1024 * 1024))
serve dst memory size=$size
python3 "$PEER" stream big-record $size |
    within 60 /usr/bin/time -f %M -o "$T/peak_kib" \
        "$FERRY" --nbd-receive="$(uri dst)" --in-flight=1M -v 2> "$T/err"
cat "$T/err" >&2
# Held: at most one request's piece (2 MiB) past the 1 MiB bound.
in_flight_max=$(sed -n 's/.* in_flight_max=\([0-9]*\) .*/\1/p' "$T/err")
[ -n "$in_flight_max" ] || fail "no in_flight_max in the -v summary"
[ "$in_flight_max" -le 2097152 ] || fail "in_flight_max=$in_flight_max, over one 2 MiB request"
peak=$(tail -n 1 "$T/peak_kib")
limit=$(rss_limit 32768)
[ "$peak" -lt "$limit" ] || fail "peak RSS $peak KiB, over $limit KiB"
python3 -c '
import sys
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2]) // 65536):
        f.write(bytes([i % 251]) * 65536)' "$T/want.raw" $size
nbdcopy "$(uri dst)" "$T/got.raw"
cmp "$T/want.raw" "$T/got.raw" || fail "DST differs from the record's bytes"
echo "one 64 MiB record: peak RSS $peak KiB, in_flight_max $in_flight_max"
