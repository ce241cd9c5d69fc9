#!/usr/bin/env bash
# Listen and forward over TCP on 127.0.0.1 both sides: three concurrent
# clients, each echoed intact.  An fd:N target cannot serve -k (the number
# is one socket, used once).
. "$(dirname "$0")/lib.sh"
need socat

target=$(free_port)
listen=$(free_port)
bg socat "TCP-LISTEN:$target,bind=127.0.0.1,reuseaddr,fork" EXEC:cat,nofork
wait_for_port "$target"
bg "$FERRY" -l -k "tcp:127.0.0.1:$listen" "tcp:127.0.0.1:$target" 2> "$T/err"
ferry=$LAST_PID
wait_for_port "$listen"

make_data data $((2 * 1024 * 1024))
pids=
for i in 1 2 3; do
    within 30 socat -t 30 - "TCP:127.0.0.1:$listen" < "$T/data" > "$T/got.$i" &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a client failed"; done
for i in 1 2 3; do assert_same_file "$T/data" "$T/got.$i" "client $i echoed"; done
kill -TERM "$ferry"
rc=0; wait "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after SIGTERM"
assert_eq "ferry: stopped by SIGTERM: 0 live connections drained, 0 cut off" "$(cat "$T/err")" "messages"

rc=0; "$FERRY" -l -k "tcp:127.0.0.1:$listen" fd:5 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "fd: target with -k"
assert_eq "ferry: fd:5 as TARGET serves one connection: not with -k" "$(cat "$T/err")" "message"
