#!/usr/bin/env bash
# ferry -l unix:PATH relays one connection (here a ferry client's 3 MiB
# upload; the listener's stdin stays open), then exits 0 and removes its
# socket file, so a second client finds nothing.
. "$(dirname "$0")/lib.sh"
make_data up $((3 * 1024 * 1024))
silent_fifo server-in
"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > "$T/server-got" & track $!
server=$LAST_PID
wait_for_socket "$T/s.sock"

cat "$T/up" | within 10 "$FERRY" "unix:$T/s.sock"
assert_eq 0 "${PIPESTATUS[1]}" "client exit code"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "listener exit code"
assert_same_file "$T/up" "$T/server-got" "upload"
[ ! -e "$T/s.sock" ] || fail "the listener left its socket file behind"

rc=0
: | within 10 "$FERRY" "unix:$T/s.sock" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "cannot connect to '$T/s.sock'"
