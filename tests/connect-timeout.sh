#!/usr/bin/env bash
# --connect-timeout: a server that listens but never accepts (backlog 0,
# already holding one queued connection) makes connects wait; ferry gives up
# after 1 s with exit 3 and "Connection timed out", over UNIX and TCP.
# A timeout too long for poll's milliseconds (4294968 s wrapped to 0.7 s)
# still waits; SIGTERM ends a connect that waits (exit 143 and "stopped by
# SIGTERM while connecting to", over UNIX and TCP: nothing was read).
. "$(dirname "$0")/lib.sh"
need python3 socat
port=$(free_port)
# The hung server: it listens and never calls accept().
python3 - "$T/hung.sock" "$port" > "$T/ready" <<'PY' & track $!
import socket, sys, time
u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[1]); u.listen(0)
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", int(sys.argv[2]))); t.listen(0)
print("ready", flush=True)
time.sleep(120)
PY
wait_until 10 grep -q ready "$T/ready"

for address in "unix:$T/hung.sock" "tcp:127.0.0.1:$port"; do
    name=$address; [ "$address" = "unix:$T/hung.sock" ] && name=$T/hung.sock
    # Fill the backlog: this client's connection waits, never accepted.
    filler=${address/#unix:/UNIX-CONNECT:}
    bg socat -u "${filler/#tcp:/TCP:}" /dev/null
    if [ "$name" = "$T/hung.sock" ]; then
        wait_until 10 has_backlog_unix "$name"
    else
        wait_until 10 has_backlog_tcp "$port"
    fi
    rc=0
    : | within 10 "$FERRY" --connect-timeout 1 "$address" 2> "$T/err" || rc=$?
    assert_ferry_error 3 "$rc" "$T/err" "ferry: cannot connect to '$name': Connection timed out"
    "$FERRY" --connect-timeout 4294968 "$address" < /dev/null 2> "$T/err" & track $!
    sleep 2
    kill -0 "$LAST_PID" 2>/dev/null || fail "--connect-timeout 4294968 gave up: $(cat "$T/err")"
    kill -TERM "$LAST_PID"
    rc=0; wait_exit 3 "$LAST_PID" || rc=$?
    assert_ferry_error 143 "$rc" "$T/err" "ferry: stopped by SIGTERM while connecting to $name"
done
