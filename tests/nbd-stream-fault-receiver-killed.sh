#!/usr/bin/env bash
# The receiver is killed midway: the sender's stdout breaks, and it says
# so (with the offset it reached) and exits 4, without hanging.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src --filter=delay pattern size=1G rdelay=5ms
serve dst memory size=1G
mkfifo "$T/pipe"
"$FERRY" --nbd-send="$(uri src)" > "$T/pipe" 2> "$T/send.err" & track $!
sender=$!
"$FERRY" --nbd-receive="$(uri dst)" < "$T/pipe" 2> /dev/null & track $!
receiver=$!
sleep 1
kill -9 "$receiver"
set +e
wait_exit 30 "$sender"
rc=$?
set -e
assert_ferry_error 4 "$rc" "$T/send.err" "cannot write the stream to stdout: Broken pipe"
assert_contains "$T/send.err" "the image was sent up to offset" "the offset reached"
