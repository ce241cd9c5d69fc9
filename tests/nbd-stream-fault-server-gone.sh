#!/usr/bin/env bash
# The source server, then the destination server, disappears mid-copy:
# the side that lost it says so and exits 20; neither hangs.  The delays
# keep each copy running well past the kill (a 1 GiB export at 8 requests
# of 8 MiB in flight and 5 ms a read took 0.9 s, and the kill came too late).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src --filter=delay pattern size=4G rdelay=100ms
src_pid=$LAST_PID
serve dst memory size=1G
"$FERRY" --nbd-send="$(uri src)" 2> "$T/send.err" > /dev/null & track $!
sender=$!
sleep 1
kill -9 "$src_pid"
set +e
wait_exit 30 "$sender"; rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/send.err" "NBD connection to nbd+unix:"
assert_contains "$T/send.err" "lost" "the connection is lost"

serve src2 --filter=delay pattern size=1G rdelay=5ms
serve dst2 --filter=delay memory size=1G wdelay=200ms
dst_pid=$LAST_PID
mkfifo "$T/pipe"
"$FERRY" --nbd-send="$(uri src2)" > "$T/pipe" 2> /dev/null & track $!
"$FERRY" --nbd-receive="$(uri dst2)" < "$T/pipe" 2> "$T/recv.err" & track $!
receiver=$!
sleep 1
kill -9 "$dst_pid"
set +e
wait_exit 30 "$receiver"; rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/recv.err" "lost"
assert_contains "$T/recv.err" "is complete up to offset" "how far the destination got"
