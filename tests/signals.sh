#!/usr/bin/env bash
# SIGINT and SIGTERM end a connected, idle ferry with exit 130 and 143,
# and a waiting listener the same way (removing its socket file).
. "$(dirname "$0")/lib.sh"
silent_fifo in

for sig in INT TERM; do
    expected=130; [ "$sig" = TERM ] && expected=143
    rm -f "$T/s.sock"
    "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
    "$FERRY" "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    client=$LAST_PID
    sleep 0.3
    kill -"$sig" "$client"
    rc=0; wait_exit 10 "$client" || rc=$?
    assert_eq "$expected" "$rc" "connected ferry's exit code after SIG$sig"
    # Its close ends the listener's relay normally.
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq 0 "$rc" "listener's exit code after its client was killed"

    "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
    kill -"$sig" "$server"
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq "$expected" "$rc" "waiting listener's exit code after SIG$sig"
    [ ! -e "$T/s.sock" ] || fail "the listener left its socket file after SIG$sig"
done
