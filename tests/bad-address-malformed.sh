#!/usr/bin/env bash
# Malformed addresses: exit 2 before connecting to anything, with a message
# that names the address.
. "$(dirname "$0")/lib.sh"
long=/tmp/$(printf '%0200d' 0)
for address in "" nowhere "unix:" "unix:@" "@" "$long" "tcp:localhost" \
               "tcp::80" "localhost:" "localhost:0" "localhost:65536" \
               "localhost:8x" "::1:80" "[::1:80" "[::1]80" "fd:" "fd:x" "fd:-1"; do
    rc=0
    : | within 10 "$FERRY" "$address" 2> "$T/err" || rc=$?
    assert_ferry_error 2 "$rc" "$T/err" "ferry: invalid address '$address': "
    assert_eq 1 "$(wc -l < "$T/err")" "lines of the message for '$address'"
done
