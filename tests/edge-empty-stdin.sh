#!/usr/bin/env bash
# Empty stdin: ferry half-closes at once, the server sees an empty upload,
# and its reply still arrives whole.
. "$(dirname "$0")/lib.sh"
: > "$T/empty"
make_data reply 100000
reply_server unix "$T/reply"

: | within 10 "$FERRY" "$FERRY_ADDR" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
assert_same_file "$T/empty" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
