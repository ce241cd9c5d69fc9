#!/usr/bin/env bash
# ferry -l LISTEN TARGET without -k: the first connection is relayed both
# ways to its own connection to TARGET, then ferry exits with that relay's
# code and removes its socket.  A refused target exits 3 with one line
# naming the connection; the command-line forms are checked too.
. "$(dirname "$0")/lib.sh"
need socat sha256sum

make_data up $((3 * 1024 * 1024))
make_data down $((3 * 1024 * 1024))
bg socat -t 30 "UNIX-LISTEN:$T/B.sock" SYSTEM:"cat '$T/down' & cat > '$T/server-got'; wait"
server=$LAST_PID
wait_for_socket "$T/B.sock"

bg "$FERRY" -l "unix:$T/A.sock" "unix:$T/B.sock"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
within 30 socat -t 30 - "UNIX-CONNECT:$T/A.sock" < "$T/up" > "$T/client-got"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/down" "$T/client-got" "download"
[ ! -e "$T/A.sock" ] || fail "ferry left its socket file behind"

# Nobody listens on the target: that connection fails, and so does ferry.
bg "$FERRY" -l "unix:$T/A.sock" "unix:$T/nobody.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
echo hello | within 10 socat -t 5 - "UNIX-CONNECT:$T/A.sock" > "$T/got" 2>/dev/null || true
rc=0; wait "$ferry" || rc=$?
assert_eq 3 "$rc" "exit code with a refused target"
assert_eq "ferry: connection 1 on $T/A.sock: cannot connect to '$T/nobody.sock': No such file or directory" \
    "$(cat "$T/err")" "message"
assert_eq 0 "$(stat -c %s "$T/got")" "bytes the refused client got"

# Usage: two addresses need -l; forwarder options need a target.
rc=0; "$FERRY" "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "two addresses without -l"
assert_contains "$T/err" "unexpected argument 'unix:$T/B.sock'" "message"
rc=0; "$FERRY" --max-connections 2 "unix:$T/B.sock" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "--max-connections without a target"
assert_contains "$T/err" "need -l LISTEN TARGET" "message"
