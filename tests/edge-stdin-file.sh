#!/usr/bin/env bash
# stdin is a regular file (always readable, never EAGAIN), larger than the
# buffer; stdout is a pipe.
. "$(dirname "$0")/lib.sh"
make_data up $((3 * 1024 * 1024 + 17))
make_data reply 100000
reply_server unix "$T/reply"

within 10 "$FERRY" "$FERRY_ADDR" < "$T/up" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[0]}" "ferry exit code"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
