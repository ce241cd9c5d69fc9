#!/usr/bin/env bash
# --stats=json on a stdio relay: one JSON object at the end, on stderr
# beside -v's lines, with the same byte counts (300000 up, 1234567 down)
# and the exit code; with -q and :FILE, in FILE alone (stderr empty); a
# relay that cannot connect has its exit code (3) in the object.
. "$(dirname "$0")/lib.sh"
need python3
J=$FERRY_SOURCE_ROOT/tests/stats-json.py
make_data up 300000
make_data reply 1234567
reply_server unix "$T/reply"
server=$LAST_PID

cat "$T/up" | within 10 "$FERRY" -v --stats=json "$FERRY_ADDR" 2> "$T/err" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/reply" "$T/got" "reply"
assert_eq 3 "$(wc -l < "$T/err")" "lines on stderr (2 of -v, 1 of JSON)"
grep '^{' "$T/err" | python3 -m json.tool > /dev/null || fail "not JSON: $(cat "$T/err")"
assert_eq 1 "$(python3 "$J" count "$T/err")" "JSON objects"
# -v's figures, and the object's.
v_up=$(sed -nE "s#^ferry: stdin -> $T/s.sock: ([0-9]+) bytes in .*#\1#p" "$T/err")
v_down=$(sed -nE "s#^ferry: $T/s.sock -> stdout: ([0-9]+) bytes in .*#\1#p" "$T/err")
assert_eq 300000 "$v_up" "-v's bytes up"
assert_eq 1234567 "$v_down" "-v's bytes down"
assert_eq "relay
$v_up
$v_down
stdin
$T/s.sock
stdout
0" "$(python3 "$J" get "$T/err" -1 type up.bytes down.bytes up.from up.to down.to exit_code)" \
    "the object's type, bytes, ends and exit code"
python3 "$J" get "$T/err" -1 milliseconds up.bytes_per_second up.reader_paused \
    up.writer_waited down.dropped > /dev/null || fail "the object's other counts"

# -q and :FILE: nothing on stderr, the one object in FILE.
reply_server unix "$T/reply"
server=$LAST_PID
cat "$T/up" | within 10 "$FERRY" -q --stats=json:"$T/stats.json" "$FERRY_ADDR" 2> "$T/err" |
    cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry -q exit code"
wait "$server" || fail "socat server exited $?"
assert_eq 0 "$(stat -c %s "$T/err")" "bytes on stderr with -q --stats=json:FILE"
assert_eq 1 "$(wc -l < "$T/stats.json")" "lines in the stats file"
python3 -m json.tool "$T/stats.json" > /dev/null || fail "the stats file is not JSON"
assert_eq "300000
1234567
0" "$(python3 "$J" get "$T/stats.json" 0 up.bytes down.bytes exit_code)" "the file's counts"

# -l -k with stdio: a line per connection, then their sums.
$DFL "$FERRY" -v -l -k --stats=json "unix:$T/k.sock" < /dev/null > "$T/k.out" 2> "$T/k.err" &
track $!
ferry=$LAST_PID
wait_for_socket "$T/k.sock"
printf a | within 10 socat -t 5 - "UNIX-CONNECT:$T/k.sock" > /dev/null
printf bb | within 10 socat -t 5 - "UNIX-CONNECT:$T/k.sock" > /dev/null
for _ in $(seq 100); do
    [ "$(python3 "$J" count "$T/k.err")" = 2 ] && break
    sleep 0.1
done
kill -TERM "$ferry"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 3 "$(python3 "$J" count "$T/k.err")" "-l -k: JSON objects (2 connections, the sums)"
for i in 1 2; do
    v_down=$(sed -nE "s#^ferry: connection $i on $T/k.sock -> stdout: ([0-9]+) bytes in .*#\1#p" "$T/k.err")
    [ -n "$v_down" ] || fail "-l -k: no -v line of connection $i"
    assert_eq "connection $v_down 0" "$(python3 "$J" get "$T/k.err" $((i - 1)) type down.bytes \
        exit_code | paste -sd ' ')" "-l -k: connection $i's line"
done
assert_eq "relay 2 3 $rc" "$(python3 "$J" get "$T/k.err" -1 type connections down.bytes exit_code |
    paste -sd ' ')" "-l -k: the sums"

# A failing relay: its exit code in the object (the file is truncated).
rc=0; "$FERRY" --stats=json:"$T/stats.json" "unix:$T/nobody.sock" < /dev/null 2> "$T/err" ||
    rc=$?
assert_eq 3 "$rc" "exit code of a relay that cannot connect"
assert_eq 1 "$(wc -l < "$T/err")" "lines on stderr: the error alone"
assert_eq "relay
3" "$(python3 "$J" get "$T/stats.json" 0 type exit_code)" "a failing relay's object"
assert_eq 1 "$(wc -l < "$T/stats.json")" "lines in the truncated stats file"

# Usage: --stats-file is --nbd's key=value file, not JSON's.
rc=0; "$FERRY" --nbd --stats=json --stats-file "$T/x" "unix:$T/nobody.sock" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "--stats=json with --stats-file"
rc=0; "$FERRY" --stats=yaml "unix:$T/nobody.sock" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "--stats=yaml"
assert_contains "$T/err" "invalid --stats 'yaml': expected json or json:FILE" "--stats=yaml's message"
