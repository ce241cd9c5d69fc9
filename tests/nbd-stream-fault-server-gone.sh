#!/usr/bin/env bash
# The source server, then the destination server, disappears mid-copy:
# the side that lost it says so and exits 20; neither hangs.  The delays
# keep each copy running well past the kill: 4 GiB at 1 s a request (the
# sender's took 13.7 s at 100 ms, the receiver's 1 GiB 7.9 s at 200 ms).
# Three .ci/run runs saw the receiver end with 0 soon after its kill: a
# write had found one connection gone while the others waited for their
# replies (nbd-stream-fault-reset-on-write makes that happen every time).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src --filter=delay pattern size=4G rdelay=1
src_pid=$LAST_PID
"$FERRY" --nbd-send="$(uri src)" 2> "$T/send.err" > /dev/null & track $!
sender=$!
sleep 1
kill -9 "$src_pid"
set +e
wait_exit 30 "$sender"; rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/send.err" "NBD connection to nbd+unix:"
assert_contains "$T/send.err" "lost" "the connection is lost"

serve src2 --filter=delay pattern size=4G rdelay=5ms
serve dst2 --filter=delay memory size=4G wdelay=1
dst_pid=$LAST_PID
mkfifo "$T/pipe"
"$FERRY" --nbd-send="$(uri src2)" > "$T/pipe" 2> "$T/send2.err" & track $!
# -v: should it ever end well again, its summary says what it wrote.
"$FERRY" -v --nbd-receive="$(uri dst2)" < "$T/pipe" 2> "$T/recv.err" & track $!
receiver=$!
sleep 1
kill -9 "$dst_pid"
set +e
wait_exit 30 "$receiver"; rc=$?
set -e
[ "$rc" = 20 ] || echo "the sender said: '$(cat "$T/send2.err")'" >&2
assert_ferry_error 20 "$rc" "$T/recv.err" "lost"
assert_contains "$T/recv.err" "is complete up to offset" "how far the destination got"
