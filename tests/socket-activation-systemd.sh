#!/usr/bin/env bash
# Socket activation with systemd's own launcher (what a ferry.socket unit
# with Accept=no does): 'ferry -k TARGET' accepts on the passed fds 3 and 4,
# names them by LISTEN_FDNAMES, relays each connection to TARGET, and leaves
# when idle.  Variables meant for another pid are ignored; -l is refused.
. "$(dirname "$0")/lib.sh"
need socat systemd-socket-activate

bg socat "UNIX-LISTEN:$T/B.sock,fork" EXEC:cat,nofork
wait_for_socket "$T/B.sock"
# systemd-socket-activate execs ferry on the first connection; two
# sockets, so fds 3 and 4, named by LISTEN_FDNAMES.
bg systemd-socket-activate -l "$T/A1.sock" -l "$T/A2.sock" --fdname=first:second \
    "$FERRY" -v -k --exit-idle-time 2 "unix:$T/B.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A2.sock"
for i in 1 2 2; do
    echo "hello $i" | within 10 socat -t 10 - "UNIX-CONNECT:$T/A$i.sock" > "$T/got"
    assert_eq "hello $i" "$(cat "$T/got")" "connection through socket $i echoed"
done
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after the idle time"
assert_contains "$T/err" "ferry: connection 1 on first: client -> $T/B.sock: 8 bytes" "-v stats"
assert_contains "$T/err" "ferry: connection 2 on second: client -> $T/B.sock: 8 bytes" "-v stats"
assert_contains "$T/err" "ferry: 3 connections, at most 1 at once, peak memory (VmHWM)" "-v summary"

# LISTEN_PID names another process: plain 'ferry ADDRESS' relays stdio.
echo plain | LISTEN_PID=1 LISTEN_FDS=1 within 10 "$FERRY" "unix:$T/B.sock" > "$T/got"
assert_eq plain "$(cat "$T/got")" "stdio relay despite another pid's variables"

# Activated, -l and a listen address make no sense.
rc=0
systemd-socket-activate -l "$T/C.sock" "$FERRY" -l "unix:$T/D.sock" "unix:$T/B.sock" \
    2> "$T/err" & activator=$!
wait_for_socket "$T/C.sock"
socat -t 5 /dev/null "UNIX-CONNECT:$T/C.sock" 2>/dev/null || true
wait "$activator" || rc=$?
assert_eq 2 "$rc" "exit code with -l when activated"
assert_contains "$T/err" "ferry: socket-activated (LISTEN_FDS=1): expected 'ferry [OPTIONS] TARGET', without -l" "message"

# Activated on something that is not a listening socket.
rc=0; LISTEN_PID=self LISTEN_FDS=1 bash -c 'export LISTEN_PID=$$; exec "$0" "$@" 3</dev/null' \
    "$FERRY" "unix:$T/B.sock" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "exit code when fd 3 is not a listening socket"
assert_eq "ferry: cannot listen on 'fd:3': Socket operation on non-socket" "$(cat "$T/err")" "message"
