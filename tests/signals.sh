#!/usr/bin/env bash
# SIGINT and SIGTERM end a connected, idle ferry with exit 130 and 143,
# and a waiting listener the same way (removing its socket file).  ferry
# must catch both (/proc says so), so the codes are its own, not the
# shell's report of a death by signal.
. "$(dirname "$0")/lib.sh"
silent_fifo in

catches () {  # PID SIGNUM: the signal is in the process's caught mask
    local mask
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status")
    (( (16#$mask >> ($2 - 1)) & 1 )) || fail "process $1 does not catch signal $2"
}

for sig in INT TERM; do
    expected=130; [ "$sig" = TERM ] && expected=143
    rm -f "$T/s.sock"
    "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
    "$FERRY" "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    client=$LAST_PID
    wait_until 10 has_sockets "$client" 1   # connected: its handlers are set
    catches "$client" "$(kill -l "$sig")"
    kill -"$sig" "$client"
    rc=0; wait_exit 10 "$client" || rc=$?
    assert_eq "$expected" "$rc" "connected ferry's exit code after SIG$sig"
    # Its close ends the listener's relay normally.
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq 0 "$rc" "listener's exit code after its client was killed"

    "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
    catches "$server" "$(kill -l "$sig")"
    kill -"$sig" "$server"
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq "$expected" "$rc" "waiting listener's exit code after SIG$sig"
    [ ! -e "$T/s.sock" ] || fail "the listener left its socket file after SIG$sig"
done
