#!/usr/bin/env bash
# Connecting to a UNIX socket that does not exist: exit 3, and the message
# names the path and the reason.
. "$(dirname "$0")/lib.sh"
for address in "unix:$T/missing.sock" "$T/missing.sock"; do
    rc=0
    : | within 10 "$FERRY" "$address" 2> "$T/err" || rc=$?
    assert_ferry_error 3 "$rc" "$T/err" \
        "ferry: cannot connect to '$T/missing.sock': No such file or directory"
done
