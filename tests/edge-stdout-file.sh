#!/usr/bin/env bash
# stdout is a regular file (always writable), the reply larger than the
# buffer; stdin is a pipe.
. "$(dirname "$0")/lib.sh"
make_data up 100000
make_data reply $((3 * 1024 * 1024 + 17))
reply_server unix "$T/reply"

rc=0
cat "$T/up" | within 10 "$FERRY" "$FERRY_ADDR" > "$T/got" || rc=$?
assert_eq 0 "$rc" "ferry exit code"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
