#!/usr/bin/env bash
# A stored stream cut at random points: the receiver reports the
# truncation with the offset, flushes, and names the offset up to which the
# destination is complete, which then matches the source; exit 21.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((64 * 1024 * 1024))
stored_source $size 17 30
len=$(stat -c %s "$T/s.stream")
i=0
for cut in 0 20 36 50 $((RANDOM * 97 % len)) $((RANDOM * 331 % len)) $((len - 93)) $((len - 1)); do
    i=$((i + 1))        # names by position: two random cuts may be equal
    serve "dst$i" memory size=$size
    head -c "$cut" "$T/s.stream" > "$T/cut.stream"
    set +e
    within 30 "$FERRY" --nbd-receive="$(uri "dst$i")" < "$T/cut.stream" 2> "$T/err"
    rc=$?
    set -e
    assert_ferry_error 21 "$rc" "$T/err" "stream truncated"
    assert_contains "$T/err" "export offset" "where the stream stopped"
    complete=$(sed -n 's/.* is complete up to offset \([0-9]*\).*/\1/p' "$T/err")
    if [ "$cut" -lt 36 ]; then kill "$LAST_PID"; continue; fi   # no header: nothing was written
    [ -n "$complete" ] || fail "no complete offset at cut $cut: $(cat "$T/err")"
    nbdcopy "$(uri "dst$i")" "$T/dst.raw"
    cmp -n "$complete" "$T/src.raw" "$T/dst.raw" || fail "cut $cut: not complete up to $complete"
    rm -f "$T/dst.raw"
    kill "$LAST_PID"
done
