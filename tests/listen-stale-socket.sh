#!/usr/bin/env bash
# A socket file left by a killed listener is replaced by the next ferry -l;
# a socket file with a live listener is not: exit 3, "Address already in use",
# and the live listener is not disturbed.
. "$(dirname "$0")/lib.sh"
need socat
silent_fifo server-in
"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > /dev/null & track $!
wait_for_socket "$T/s.sock"
kill -KILL "$LAST_PID"
wait "$LAST_PID" 2>/dev/null || true
[ -S "$T/s.sock" ] || fail "a killed listener left no socket file (test premise)"

"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > "$T/server-got" & track $!
server=$LAST_PID
# The file is the same path either way: wait until the new listener answers.
for _ in $(seq 100); do
    socat -u /dev/null "UNIX-CONNECT:$T/s.sock" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.05
done
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "exit code of the listener that replaced the stale socket"

# A live listener: a one-shot ferry -l.  The second ferry -l must leave it
# alone (not even connect to it, or it would take that as its one client):
# afterwards it is still there and serves a real client.
rm -f "$T/s.sock"
"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > "$T/server-got" & track $!
server=$LAST_PID
wait_for_socket "$T/s.sock"
rc=0
within 10 "$FERRY" -l "unix:$T/s.sock" < /dev/null 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "ferry: cannot listen on '$T/s.sock': Address already in use"
sleep 0.2
kill -0 "$server" 2>/dev/null || fail "the live listener exited: it was disturbed"
[ -S "$T/s.sock" ] || fail "the live listener's socket file was removed"
# A client that closes completely (the listener's stdin stays open: a
# client's half-close alone would not end its relay).
printf 'still here\n' | within 10 socat -u - "UNIX-CONNECT:$T/s.sock"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "the live listener's exit code"
assert_eq "still here" "$(cat "$T/server-got")" "what the live listener received"
