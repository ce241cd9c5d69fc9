#!/usr/bin/env bash
# The server writes 4 MiB and closes while ferry's stdin stays open (a FIFO
# whose writer is silent).  All 4 MiB must arrive and ferry must exit 0 at
# once, without waiting for stdin.
. "$(dirname "$0")/lib.sh"
need socat
make_data down $((4 * 1024 * 1024))
silent_fifo in
listen_addresses unix
bg socat -u "OPEN:$T/down" "$SOCAT_LISTEN"
wait_for_listener unix

within 10 "$FERRY" "$FERRY_ADDR" < "$T/in" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[0]}" "ferry exit code"
assert_same_file "$T/down" "$T/got" "download"
