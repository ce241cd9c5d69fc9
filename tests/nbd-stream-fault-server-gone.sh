#!/usr/bin/env bash
# The source server, then the destination server, disappears mid-copy:
# the side that lost it says so and exits 20; neither hangs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src --filter=delay pattern size=1G rdelay=5ms
src_pid=$LAST_PID
serve dst memory size=1G
"$FERRY" --nbd-send="$(uri src)" 2> "$T/send.err" > "$T/part.stream" & track $!
sender=$!
sleep 1
kill -9 "$src_pid"
set +e
wait_exit 30 "$sender"; rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/send.err" "NBD connection to nbd+unix:"
assert_contains "$T/send.err" "lost" "the connection is lost"

serve src2 --filter=delay pattern size=1G rdelay=5ms
serve dst2 --filter=delay memory size=1G wdelay=20ms
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
