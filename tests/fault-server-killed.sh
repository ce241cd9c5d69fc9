#!/usr/bin/env bash
# The server is killed mid-upload, with ferry's bytes still unread in its
# socket: ferry's writes to the socket fail.  It must exit 4 at once with a
# message naming the socket and the reason.  (The reset can also fail its
# read of the socket first: that is a line of its own.)  The server is a
# ferry -l whose stdout nobody reads, so it soon stops reading the socket.
. "$(dirname "$0")/lib.sh"
silent_fifo in
deaf_fifo out
listen_addresses unix
"$FERRY" -l "$FERRY_ADDR" < "$T/in" > "$T/out" & track $!
server=$LAST_PID
wait_for_listener unix

# An endless upload; ferry's exit ends it through SIGPIPE.
cat /dev/zero | "$FERRY" "$FERRY_ADDR" 2> "$T/err" > "$T/got" & track $!
ferry=$LAST_PID
wait_until 10 has_unread_socket "$server"   # the server is full, not reading
kill -KILL "$server"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 4 "$rc" "ferry exit code"
grep -Eq "^ferry: cannot (write to|read from) $T/s.sock: (Broken pipe|Connection reset by peer)" "$T/err" ||
    fail "unexpected message: $(cat "$T/err")"
# ferry may also say how much more of stdin it read and dropped after the
# failure, while it waited for the socket's read side to end.
! grep -v -e "^ferry: cannot \(write to\|read from\) $T/s.sock: " \
          -e "^ferry: [0-9]* more bytes from stdin dropped after $T/s.sock failed$" "$T/err" ||
    fail "unexpected lines on stderr"
