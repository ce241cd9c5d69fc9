#!/usr/bin/env bash
# ferry -l -k accepts one connection after another on the same socket, with
# its stdout staying open across them; SIGTERM between connections ends it
# with exit 0 (nothing was left undelivered), and it removes its socket
# file.  Its stdin stays open and silent: a client's half-close ends one
# direction only, so --half-close-timeout=1 ends each connection once the
# listener's side has been idle 1 s.
. "$(dirname "$0")/lib.sh"
silent_fifo server-in
mkfifo "$T/server-out"
"$FERRY" -l -k --half-close-timeout=1 "unix:$T/s.sock" < "$T/server-in" > "$T/server-out" & track $!
server=$LAST_PID
cat < "$T/server-out" > "$T/server-got" & track $!
reader=$LAST_PID
wait_for_socket "$T/s.sock"

for i in 1 2 3; do
    printf 'message %d\n' "$i" | within 10 "$FERRY" "unix:$T/s.sock"
    assert_eq 0 "${PIPESTATUS[1]}" "client $i exit code"
done
# Also a client that is not ferry.
printf 'message 4\n' | within 10 socat - "UNIX-CONNECT:$T/s.sock"

kill -0 "$server" 2>/dev/null || fail "ferry -l -k exited after its connections"
kill -TERM "$server"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "ferry -l -k exit code after SIGTERM"
wait_exit 10 "$reader" || fail "reader exited $?"
assert_eq "$(printf 'message %d\n' 1 2 3 4)" "$(cat "$T/server-got")" "what the listener received"
[ ! -e "$T/s.sock" ] || fail "the listener left its socket file behind"
