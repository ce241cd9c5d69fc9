#!/usr/bin/env bash
# ferry -l over TCP: nc -d (it sends nothing) connects and downloads 3 MiB
# that the listener reads from its stdin; the listener's EOF half-closes the
# connection, nc exits, and so does the listener, both with 0.
. "$(dirname "$0")/lib.sh"
need nc
make_data down $((3 * 1024 * 1024))
port=$(free_port)
"$FERRY" -l "127.0.0.1:$port" < "$T/down" > "$T/server-got" & track $!
server=$LAST_PID
wait_for_port "$port"

within 10 nc -d 127.0.0.1 "$port" > "$T/got" || fail "nc exited $?"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "listener exit code"
assert_same_file "$T/down" "$T/got" "download"
assert_eq 0 "$(stat -c %s "$T/server-got")" "bytes the listener received"
