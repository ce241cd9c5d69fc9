#!/usr/bin/env bash
# SIGTERM while a forwarder's worker connects to a TCP TARGET that never
# accepts (backlog 0, already holding one queued connection): the signal
# reaches the main loop, not the worker, whose connect looks for the stop
# between its waits.  The connect ends at once, long before its
# --connect-timeout of 30 s, and its line says the signal stopped it; the
# connection is cut off, so 143.  (It waited for the timeout, and said
# "Connection timed out".)
. "$(dirname "$0")/lib.sh"
need python3 socat ss
port=$(free_port)
hung_tcp_server "$port"

bg "$FERRY" -l --connect-timeout 30 "unix:$T/A.sock" "tcp:127.0.0.1:$port" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
bg socat -u "UNIX-CONNECT:$T/A.sock" /dev/null
connecting () { [ -n "$(ss -Htn state syn-sent "dport = :$port")" ]; }
wait_until 10 connecting
kill -TERM "$ferry"
rc=0; wait_exit 5 "$ferry" || rc=$?
cat "$T/err" >&2
assert_eq 143 "$rc" "exit code"
assert_eq "ferry: connection 1 on $T/A.sock: stopped by SIGTERM while connecting to tcp:127.0.0.1:$port" \
    "$(head -1 "$T/err")" "the connection's line"
assert_eq "ferry: stopped by SIGTERM: 0 live connections drained, 1 cut off" \
    "$(tail -1 "$T/err")" "the summary"
