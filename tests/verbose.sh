#!/usr/bin/env bash
# -v prints one statistics line per direction at exit, with the exact byte
# counts: 300000 bytes up, 1234567 down.
. "$(dirname "$0")/lib.sh"
make_data up 300000
make_data reply 1234567
reply_server unix "$T/reply"

cat "$T/up" | within 10 "$FERRY" -v "$FERRY_ADDR" 2> "$T/err" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
assert_same_file "$T/reply" "$T/got" "reply"
stats='bytes in [0-9.]+ s, [0-9.]+ MiB/s, reader paused [0-9]+ times \(buffer full\), writer waited [0-9]+ times \(peer busy\)$'
grep -Eq "^ferry: stdin -> $T/s.sock: 300000 $stats" "$T/err" ||
    fail "no upload statistics in: $(cat "$T/err")"
grep -Eq "^ferry: $T/s.sock -> stdout: 1234567 $stats" "$T/err" ||
    fail "no download statistics in: $(cat "$T/err")"
assert_eq 2 "$(wc -l < "$T/err")" "lines on stderr"
