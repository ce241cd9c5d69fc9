#!/usr/bin/env bash
# Half-close, fast reply: 1 MiB up, then stdin EOF; the server reads to EOF
# and only then replies with 1 MiB.  The whole reply must arrive.
. "$(dirname "$0")/lib.sh"
make_data up $((1024 * 1024))
make_data reply $((1024 * 1024))
reply_server unix "$T/reply"
server=$LAST_PID

cat "$T/up" | within 30 "$FERRY" "$FERRY_ADDR" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
