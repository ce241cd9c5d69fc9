#!/usr/bin/env bash
# ferry -l -k: while one relay is busy, the target refuses a second
# connection and a third client resets its connection.  Each failure is one
# line naming its connection; the busy relay delivers every byte both ways.
. "$(dirname "$0")/lib.sh"
need socat python3 sha256sum

make_data part1 $((1024 * 1024))
make_data part2 $((1024 * 1024))
cat "$T/part1" "$T/part2" > "$T/whole"
# The target echoes each connection back.
bg socat -t 30 "UNIX-LISTEN:$T/B.sock,fork" EXEC:cat,nofork 2>/dev/null
wait_for_socket "$T/B.sock"
bg "$FERRY" -l -k "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"

# Connection 1: stays busy, in two parts, until the others are done (or
# the test has failed and its directory is gone).
bg bash -c "{ cat '$T/part1'; until [ -e '$T/go' ] || [ ! -d '$T' ]; do sleep 0.1; done; cat '$T/part2'; } |
            socat -t 30 - 'UNIX-CONNECT:$T/A.sock' > '$T/got1'"
busy=$LAST_PID
wait_until 10 has_sockets "$ferry" 3

# Connection 2: the target refuses (its path now names a socket nobody
# listens on).
mv "$T/B.sock" "$T/B.live"
fake_socket "$T/B.sock"
echo hello | within 10 socat -t 5 - "UNIX-CONNECT:$T/A.sock" > "$T/got2" 2>/dev/null || true
mv -f "$T/B.live" "$T/B.sock"
wait_until 10 grep -q "connection 2" "$T/err"

# Connection 3: the client stops reading, then dies with bytes unread, so
# the kernel resets its connection.
bg socat -u /dev/zero "UNIX-CONNECT:$T/A.sock"
writer=$LAST_PID
wait_until 10 has_sockets "$ferry" 5
# Only once echoed bytes wait unread: killed earlier, on a loaded machine
# before it wrote anything, the client would just close.
wait_until 10 has_unread_socket "$writer"
kill -KILL "$writer"
wait_until 10 grep -q "connection 3" "$T/err"

touch "$T/go"
wait_exit 30 "$busy" || fail "busy client failed"
assert_same_file "$T/whole" "$T/got1" "busy connection, echoed both ways"
assert_eq 0 "$(stat -c %s "$T/got2")" "bytes the refused client got"
assert_eq "ferry: connection 2 on $T/A.sock: cannot connect to '$T/B.sock': Connection refused" \
    "$(grep "connection 2" "$T/err")" "refused message"
grep "connection 3" "$T/err" | grep -qE "^ferry: connection 3 on $T/A.sock: cannot (read from|write to) (client|$T/B.sock): (Connection reset by peer|Broken pipe)" ||
    fail "reset message: $(cat "$T/err")"
! grep -q "connection 1" "$T/err" || fail "busy connection reported an error: $(cat "$T/err")"
kill -0 "$ferry" || fail "ferry exited after its relays failed"
kill -TERM "$ferry"
rc=0; wait "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after SIGTERM"
