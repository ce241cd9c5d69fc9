#!/usr/bin/env bash
# Connecting to a TCP port nobody listens on: exit 3, and the message names
# the address and the reason.
. "$(dirname "$0")/lib.sh"
port=$(free_port)
for address in "tcp:127.0.0.1:$port" "127.0.0.1:$port"; do
    rc=0
    : | within 10 "$FERRY" "$address" 2> "$T/err" || rc=$?
    assert_ferry_error 3 "$rc" "$T/err" \
        "ferry: cannot connect to '$address': Connection refused"
done
