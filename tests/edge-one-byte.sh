#!/usr/bin/env bash
# A 1-byte stdin, and a 1-byte reply.
. "$(dirname "$0")/lib.sh"
printf x > "$T/up"
printf y > "$T/reply"
reply_server unix "$T/reply"

cat "$T/up" | within 10 "$FERRY" "$FERRY_ADDR" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
