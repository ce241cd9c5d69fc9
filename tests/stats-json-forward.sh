#!/usr/bin/env bash
# --stats=json on a forwarder (-l -k LISTEN TARGET): a line per connection
# as it ends (2 here, their bytes as -v counts them), then the total
# object at exit with the connections, their sums and the exit code; a
# forwarder whose TARGET refuses has the connection's code, 3, in both.
. "$(dirname "$0")/lib.sh"
need socat python3
J=$FERRY_SOURCE_ROOT/tests/stats-json.py

make_data up1 100000
make_data up2 200000
bg socat -t 30 "UNIX-LISTEN:$T/B.sock,fork" EXEC:cat
wait_for_socket "$T/B.sock"
$DFL "$FERRY" -v -k --stats=json -l "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err" &
track $!
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
within 30 socat -t 30 - "UNIX-CONNECT:$T/A.sock" < "$T/up1" > "$T/got1"
within 30 socat -t 30 - "UNIX-CONNECT:$T/A.sock" < "$T/up2" > "$T/got2"
assert_same_file "$T/up1" "$T/got1" "connection 1's echo"
assert_same_file "$T/up2" "$T/got2" "connection 2's echo"
# The second connection's line comes when it has ended on ferry's side.
for _ in $(seq 100); do
    [ "$(python3 "$J" count "$T/err")" = 2 ] && break
    sleep 0.1
done
kill -TERM "$ferry"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry's exit code after SIGTERM with no live connection"
cat "$T/err" >&2
grep '^{' "$T/err" | while read -r line; do
    printf '%s\n' "$line" | python3 -m json.tool > /dev/null || fail "not JSON: $line"
done
assert_eq 3 "$(python3 "$J" count "$T/err")" "JSON objects: 2 connections, then the total"
for i in 1 2; do
    size=$(stat -c %s "$T/up$i")
    read -r v_up v_down < <(sed -nE "s#^ferry: connection $i on $T/A.sock: client -> $T/B.sock: ([0-9]+) bytes .*#\1#p;
                                     s#^ferry: connection $i on $T/A.sock: $T/B.sock -> client: ([0-9]+) bytes .*#\1#p" \
                                 "$T/err" | paste -sd ' ')
    assert_eq "$size $size" "$v_up $v_down" "-v's bytes of connection $i"
    assert_eq "connection
connection $i on $T/A.sock
$v_up
$v_down
0" "$(python3 "$J" get "$T/err" $((i - 1)) type connection up.bytes down.bytes exit_code)" \
        "connection $i's line"
done
assert_eq "forward
2
0
300000
300000
0" "$(python3 "$J" get "$T/err" -1 type connections failed_connections up.bytes down.bytes exit_code)" \
    "the total object"
v_peak=$(sed -nE 's/^ferry: 2 connections, at most ([0-9]+) at once, .*/\1/p' "$T/err")
assert_eq "$v_peak" "$(python3 "$J" get "$T/err" -1 peak_connections)" "peak connections, as -v's"

# A refused TARGET, without -k: the connection's code is ferry's.
$DFL "$FERRY" -q --stats=json -l "unix:$T/C.sock" "unix:$T/nobody.sock" 2> "$T/err" &
track $!
ferry=$LAST_PID
wait_for_socket "$T/C.sock"
echo hello | within 10 socat -t 5 - "UNIX-CONNECT:$T/C.sock" > /dev/null 2>&1 || true
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 3 "$rc" "exit code with a refused target"
assert_eq "connection
3" "$(python3 "$J" get "$T/err" 0 type exit_code)" "the refused connection's line"
assert_eq "forward
1
1
3" "$(python3 "$J" get "$T/err" -1 type connections failed_connections exit_code)" \
    "the total object of a failed forward"
