#!/usr/bin/env bash
# fd:N relays over a connected socket inherited from the parent: a TCP
# socket that bash opened (/dev/tcp), and the socketpair socat's EXEC hands
# its child.  An fd that is not a socket, or not open, gives exit 3.
. "$(dirname "$0")/lib.sh"
need socat
make_data up 300000
make_data reply 400000

# bash connects; ferry inherits the socket as fd N.
reply_server tcp "$T/reply"
port=${FERRY_ADDR##*:}
exec {sock}<> "/dev/tcp/127.0.0.1/$port"
cat "$T/up" | within 10 "$FERRY" "fd:$sock" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry fd:$sock (TCP from bash) exit code"
exec {sock}>&-
assert_same_file "$T/up" "$T/server-got" "upload over the TCP socket"
assert_same_file "$T/reply" "$T/got" "reply over the TCP socket"

# socat connects and runs ferry with its end of a socketpair on fd 3.
rm -f "$T/server-got"
reply_server unix "$T/reply"
# (socat wants the colon escaped.)
cat "$T/up" | within 10 socat -t 10 "UNIX-CONNECT:$T/s.sock" \
    EXEC:"$FERRY fd\\:3",fdin=3,fdout=3,end-close | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "socat running ferry fd:3 exit code"
assert_same_file "$T/up" "$T/server-got" "upload over the socketpair"
assert_same_file "$T/reply" "$T/got" "reply over the socketpair"

exec {pipe}< <(:)
rc=0
: | within 10 "$FERRY" "fd:$pipe" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "ferry: cannot connect to 'fd:$pipe': not a socket"
exec {pipe}<&-
rc=0
: | within 10 "$FERRY" fd:99 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "ferry: cannot connect to 'fd:99': Bad file descriptor"
