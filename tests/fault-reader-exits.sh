#!/usr/bin/env bash
# ferry's stdout reader exits after 1000 bytes while the server still sends:
# ferry's writes to stdout fail.  It must exit 4 at once with a message
# naming stdout and the reason, and the count of bytes it could not deliver.
. "$(dirname "$0")/lib.sh"
need socat
make_data down $((16 * 1024 * 1024))
silent_fifo in
listen_addresses unix
bg socat -u "OPEN:$T/down" "$SOCAT_LISTEN"
wait_for_listener unix

within 10 "$FERRY" "$FERRY_ADDR" < "$T/in" 2> "$T/err" | head -c 1000 > "$T/got"
rc=${PIPESTATUS[0]}
assert_ferry_error 4 "$rc" "$T/err" "ferry: cannot write to stdout: Broken pipe ("
grep -Eq 'Broken pipe \([0-9]+ bytes delivered, [1-9][0-9]* buffered bytes not delivered\)$' "$T/err" ||
    fail "no byte counts in: $(cat "$T/err")"
assert_eq 1000 "$(stat -c %s "$T/got")" "bytes the reader took"
