#!/usr/bin/env bash
# ferry started with stdin, stdout or stderr closed must not let its socket
# (or any fd) take that number: a closed stdin reads as an error, not as
# bytes from somewhere else; a closed stdout fails its writes with a count;
# a closed stderr does not send ferry's messages into the socket.
. "$(dirname "$0")/lib.sh"
printf 'reply\n' > "$T/reply"

# stdin closed: the server gets nothing, the reply still arrives, exit 4.
reply_server unix "$T/reply"
rc=0
within 10 "$FERRY" "$FERRY_ADDR" <&- > "$T/got" 2> "$T/err" || rc=$?
assert_ferry_error 4 "$rc" "$T/err" "ferry: cannot read from stdin: Bad file descriptor"
assert_eq 0 "$(stat -c %s "$T/server-got")" "bytes the server got"
assert_eq reply "$(cat "$T/got")" "reply"

# stdout closed: the upload arrives, the reply is counted as not delivered.
reply_server unix "$T/reply"
rc=0
printf hello | within 10 "$FERRY" "$FERRY_ADDR" >&- 2> "$T/err" || rc=$?
assert_ferry_error 4 "$rc" "$T/err" \
    "ferry: cannot write to stdout: Bad file descriptor (0 bytes delivered, 6 buffered bytes not delivered)"
assert_eq hello "$(cat "$T/server-got")" "upload"

# stderr closed, with -v: the statistics go nowhere, not to the server.
reply_server unix "$T/reply"
printf hello | within 10 "$FERRY" -v "$FERRY_ADDR" 2>&- > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
assert_eq hello "$(cat "$T/server-got")" "upload"
assert_eq reply "$(cat "$T/got")" "reply"
