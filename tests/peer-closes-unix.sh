#!/usr/bin/env bash
# The server sends 4 MiB and close()s while ferry's stdin stays open and
# idle.  On a UNIX socket poll reports HUP only when the peer has shut both
# directions, so ferry knows the peer is gone: it exits 0 within 1 s of the
# server's exit, with all 4 MiB delivered, without waiting for stdin.
. "$(dirname "$0")/lib.sh"
make_data down $((4 * 1024 * 1024))
silent_fifo in
listen_addresses unix
eos_peer listen "$FERRY_ADDR" send-close "$T/down"
server=$LAST_PID
wait_for_listener unix "$server"

"$FERRY" "$FERRY_ADDR" < "$T/in" > "$T/got" 2> "$T/err" & track $!
ferry=$LAST_PID
wait_exit 10 "$server" || fail "server exited $?"
rc=0; wait_exit 1 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code ($(cat "$T/err"))"
assert_same_file "$T/down" "$T/got" "download before the close"
