#!/usr/bin/env bash
# --exit-idle-time: ferry -l -k exits 0 once SECS pass with no connection
# live, but never while a relay is live, however quiet it is.
. "$(dirname "$0")/lib.sh"
need socat systemd-socket-activate

bg socat "UNIX-LISTEN:$T/B.sock,fork" EXEC:cat,nofork
wait_for_socket "$T/B.sock"

# Nobody comes: ferry leaves after about a second, removing its socket.
rc=0; within 10 "$FERRY" -l -k --exit-idle-time 1 "unix:$T/A.sock" "unix:$T/B.sock" || rc=$?
assert_eq 0 "$rc" "exit code with no connection"
[ ! -e "$T/A.sock" ] || fail "socket file left behind"

# A connection quiet for 3 s keeps ferry up; it leaves 2 s after.  The
# socket is systemd-socket-activate's, which starts ferry only once the
# client has connected: no race with the idle time on a loaded machine.
bg systemd-socket-activate -l "$T/A.sock" \
    "$FERRY" -k --exit-idle-time 2 "unix:$T/B.sock" 2>/dev/null
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
{ echo first; sleep 3; echo second; } | within 10 socat -t 10 - "UNIX-CONNECT:$T/A.sock" > "$T/got"
assert_eq "first
second" "$(cat "$T/got")" "echoed through a quiet relay"
kill -0 "$ferry" 2>/dev/null || fail "ferry exited while a relay was live"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after the idle time"
