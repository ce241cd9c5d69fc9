#!/usr/bin/env bash
# Half-close, slow reply: 64 KiB up, then stdin EOF; the server replies
# 1.5 s after that EOF (socat itself would have given up after 0.5 s).  The
# whole reply must arrive.
. "$(dirname "$0")/lib.sh"
make_data up $((64 * 1024))
make_data reply $((256 * 1024))
reply_server unix "$T/reply" 1.5
server=$LAST_PID

cat "$T/up" | within 30 "$FERRY" "$FERRY_ADDR" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
