#!/usr/bin/env bash
# The ranged stream of --streams (doc/nbd-stream.md, section 8), each side
# against a forged peer: a sender refuses a READY that is not all zero, a
# request off the block size or past the export and an answer whose block digests differ from its own
# (naming the range and the first block), and stops for SIGTERM while it
# waits for that answer; a receiver refuses records out
# of order in a range, a RANGE_END digest that is not its data's and an
# END with a digest, and one without --ranged refuses version 2.  With --delta, a sender refuses
# DEST's digests of the wrong length, and a receiver a SAME record past
# its range and a version 1 delta, and one without --delta a delta stream; a range of SAME
# records is applied (nothing written) and answered with DEST's digests,
# and fails the range's digest where DEST does not hold it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
PEER=$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py
serve src sparse-random size=8M seed=4 percent=100
serve dst memory size=8M

peer_case () {  # CASE RC TEXT
    local rc=0
    within 60 python3 "$PEER" sender-peer "$1" "$FERRY" --nbd-send="$(uri src)" --ranged \
        "${@:4}" 2> "$T/peer.err" || rc=$?
    cat "$T/peer.err" >&2
    assert_eq "$2" "$rc" "$1: exit code"
    assert_contains "$T/peer.err" "$3" "$1: message"
}
peer_case bad-digests 22 "ferry: the range at offset 0 (1048576 bytes): the digest of what the receiver applied differs from $(uri src)'s, first at offset 65536"
peer_case stop 143 "ferry: stopped by SIGTERM; the image was sent up to offset 1048576"
peer_case ready-length 21 "ferry: a READY at offset 0, length 1 on the stream's return direction: both must be 0"
peer_case unaligned 21 "ferry: a request for the range [4096, +65536) of an export of 8388608 bytes: not inside it, not on 65536-byte blocks"
peer_case outside 21 "ferry: a request for the range [8323072, +131072) of an export of 8388608 bytes: not inside it"
# It wrote 4 MiB of records with unset headers after the stop (review h16q).
peer_case delta-stop 143 "ferry: stopped by SIGTERM; the image was sent up to offset 0 (84 bytes written)" --delta
peer_case delta-short 21 "ferry: digests for [0, 480 bytes of digests), expected the range at 0 (512)" --delta

stream_case () {  # CASE RC TEXT [RECEIVE_OPTIONS...]
    local case=$1 want=$2 text=$3 rc=0; shift 3
    python3 "$PEER" stream "$case" 8388608 |
        within 60 "$FERRY" --nbd-receive="$(uri dst)" "$@" > "$T/answer" 2> "$T/recv.err" || rc=$?
    cat "$T/recv.err" >&2
    assert_eq "$want" "$rc" "$case $*: exit code"
    [ -z "$text" ] || assert_contains "$T/recv.err" "$text" "$case $*: message"
}
stream_case order 21 "ferry: record at offset 65536, expected 0" --ranged
stream_case bad-digest 22 "ferry: the range at offset 0 (131072 bytes): digest mismatch: its RANGE_END says 0000" --ranged
stream_case end-digest 21 "ferry: END of a ranged stream with a digest (each range has its own)" --ranged
stream_case good 21 "unsupported stream version 2 (this ferry reads 1; version 2 is the ranged stream of --streams)"
# A valid range is applied, and its block digests come back after READY.
stream_case good 0 "" --ranged
assert_eq $((24 + 24 + 64 + 4)) "$(stat -c %s "$T/answer")" "good: READY and the DIGESTS answer"
stream_case delta-good 21 "a delta stream (flag DELTA), which this reader was not asked to apply" --ranged
# A version 1 delta (SAME outside any range) crashed a --ranged --delta receiver.
stream_case delta-v1 21 "ferry: a delta stream of version 1: ferry applies a delta only in the ranged stream" --ranged --delta
stream_case delta-outside 21 "record [0, +196608) outside the export of 131072 bytes" --ranged --delta
# A STOP is taken while DEST's digests are computed: no digests wait for it.
stream_case delta-stop 143 "ferry: the sender was stopped by SIGTERM; in the range at offset 0 (131072 bytes), $(uri dst) is complete up to offset 0 (flushed)" --ranged --delta
# DST holds the good case's range: SAME records leave it.
nbdcopy "$(uri dst)" "$T/before.raw"
stream_case delta-good 0 "" --ranged --delta
# READY, DEST's digests, then the applied ones: the same, and DEST unchanged.
assert_eq $((24 + 2 * (24 + 64 + 4))) "$(stat -c %s "$T/answer")" "delta-good: the answers"
assert_eq "$(tail -c 68 "$T/answer" | od -An -tx1)" \
    "$(head -c $((24 + 24 + 68)) "$T/answer" | tail -c 68 | od -An -tx1)" "delta-good: DEST's digests applied"
nbdcopy "$(uri dst)" - | cmp - "$T/before.raw" || fail "delta-good: DEST changed"
# A forged sender's SAME records for a DST that does not hold the range:
# the range's digest (DEST's digests of its blocks) is not RANGE_END's.
serve fresh memory size=8M
rc=0
python3 "$PEER" stream delta-good 8388608 |
    within 60 "$FERRY" --nbd-receive="$(uri fresh)" --ranged --delta > "$T/answer" 2> "$T/recv.err" || rc=$?
cat "$T/recv.err" >&2
assert_eq 22 "$rc" "delta-good into a DST that differs: exit code"
assert_contains "$T/recv.err" "ferry: the range at offset 0 (131072 bytes): digest mismatch: its RANGE_END says " \
    "delta-good into a DST that differs: message"
