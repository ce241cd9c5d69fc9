#!/usr/bin/env bash
# --idle-timeout: traffic every 0.5 s for 3 s keeps a 2 s timeout from
# firing; then with no traffic either way ferry gives up, exit 5, with a
# message that says so.  The peer is ferry -l, which then sees the close.
. "$(dirname "$0")/lib.sh"
silent_fifo server-in
listen_addresses unix
"$FERRY" -l "$FERRY_ADDR" < "$T/server-in" > "$T/server-got" & track $!
server=$LAST_PID
wait_for_listener unix

mkfifo "$T/in"
exec {feed}<> "$T/in"   # the test's own trickle; never closed, so no EOF
"$FERRY" --idle-timeout 2 "$FERRY_ADDR" < "$T/in" 2> "$T/err" > /dev/null & track $!
ferry=$LAST_PID
for i in 1 2 3 4 5 6; do
    echo "tick $i" >&"$feed"
    sleep 0.5
done
kill -0 "$ferry" 2>/dev/null || fail "ferry timed out although there was traffic"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_ferry_error 5 "$rc" "$T/err" "ferry: no traffic for 2 s, giving up"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "ferry -l exit code"
assert_eq "$(printf 'tick %d\n' 1 2 3 4 5 6)" "$(cat "$T/server-got")" "bytes the server got"
