#!/usr/bin/env bash
# stdout is /dev/full: every write fails with ENOSPC.  ferry must exit 4
# with a message naming stdout and the reason.
. "$(dirname "$0")/lib.sh"
[ -c /dev/full ] || skip "no /dev/full"
make_data reply 100000
reply_server unix "$T/reply"

rc=0
printf hello | within 10 "$FERRY" "$FERRY_ADDR" > /dev/full 2> "$T/err" || rc=$?
assert_ferry_error 4 "$rc" "$T/err" "ferry: cannot write to stdout: No space left on device (0 bytes delivered"
assert_eq hello "$(cat "$T/server-got")" "upload"
