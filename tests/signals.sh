#!/usr/bin/env bash
# SIGINT, SIGTERM and SIGHUP stop a connected, idle ferry (and nc): nothing
# is buffered, so it exits 0 without a word; SIGQUIT gives up at once with
# the count and 131 (nc: 1).  A waiting listener exits 0 on each, removing its socket
# file.  ferry must catch them all, and SIGUSR1 (/proc says so), so the
# codes are its own, not the shell's report of a death by signal.
. "$(dirname "$0")/lib.sh"
silent_fifo in

catches () {  # PID SIGNUM: the signal is in the process's caught mask
    local mask
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status")
    (( (16#$mask >> ($2 - 1)) & 1 )) || fail "process $1 does not catch signal $2"
}

for sig in INT TERM HUP QUIT; do
    for personality in ferry nc; do
        # A clean stop is silent, as netcat's (-v below says it); nc's
        # codes are 0 and 1 only.
        expected=0 line=""
        if [ "$sig" = QUIT ]; then
            expected=131
            line="ferry: stopped by SIGQUIT (0 bytes buffered for $T/s.sock, 0 for stdout not delivered)"
        fi
        client_cmd=("$FERRY" "unix:$T/s.sock")
        if [ "$personality" = nc ]; then
            client_cmd=("$FERRY" --compat=nc -U "$T/s.sock")
            [ -z "$line" ] || expected=1 line="nc: ${line#ferry: }"
        fi
        rm -f "$T/s.sock"
        "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
        server=$LAST_PID
        wait_for_socket "$T/s.sock"
        $DFL "${client_cmd[@]}" < "$T/in" > /dev/null 2> "$T/err" & track $!
        client=$LAST_PID
        wait_until 10 has_sockets "$client" 1   # connected: its handlers are set
        for s in "$sig" USR1; do catches "$client" "$(kill -l "$s")"; done
        kill -"$sig" "$client"
        rc=0; wait_exit 10 "$client" || rc=$?
        assert_eq "$expected" "$rc" "connected $personality's exit code after SIG$sig"
        assert_eq "$line" "$(cat "$T/err")" "connected $personality's message after SIG$sig"
        # Its close ends the listener's relay normally.
        rc=0; wait_exit 10 "$server" || rc=$?
        assert_eq 0 "$rc" "listener's exit code after its client was stopped"
    done

    $DFL "$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null 2> "$T/err" & track $!
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
    catches "$server" "$(kill -l "$sig")"
    kill -"$sig" "$server"
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq 0 "$rc" "waiting listener's exit code after SIG$sig"
    assert_eq "" "$(cat "$T/err")" "waiting listener's message after SIG$sig"
    [ ! -e "$T/s.sock" ] || fail "the listener left its socket file after SIG$sig"
done

# With -v, a clean stop says so: connected, and waiting for a connection.
rm -f "$T/s.sock"
"$FERRY" -l "unix:$T/s.sock" < "$T/in" > /dev/null & track $!
server=$LAST_PID
wait_for_socket "$T/s.sock"
"$FERRY" -v "unix:$T/s.sock" < "$T/in" > /dev/null 2> "$T/err" & track $!
client=$LAST_PID
wait_until 10 has_sockets "$client" 1
catches "$client" "$(kill -l TERM)"
kill -TERM "$client"
rc=0; wait_exit 10 "$client" || rc=$?
assert_eq 0 "$rc" "connected ferry -v's exit code after SIGTERM"
grep -qx "ferry: stopped by SIGTERM: every byte read was delivered" "$T/err" ||
    fail "ferry -v after SIGTERM said: $(cat "$T/err")"
rc=0; wait_exit 10 "$server" || rc=$?
"$FERRY" -v -l "unix:$T/s.sock" < "$T/in" > /dev/null 2> "$T/err" & track $!
server=$LAST_PID
wait_for_socket "$T/s.sock"
catches "$server" "$(kill -l TERM)"
kill -TERM "$server"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "waiting listener -v's exit code after SIGTERM"
assert_eq "ferry: stopped by SIGTERM while waiting for a connection" "$(cat "$T/err")" \
    "waiting listener -v's message after SIGTERM"
