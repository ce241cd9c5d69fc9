#!/usr/bin/env bash
# ferry -l unix:PATH relays one connection (here a ferry client's 3 MiB
# upload), then exits 0 and removes its socket file, so a second client
# finds nothing.  The client's half-close ends only the upload: the
# listener keeps relaying its own stdin to the client until that stdin's
# EOF, and its last line reaches the client.
. "$(dirname "$0")/lib.sh"
make_data up $((3 * 1024 * 1024))
mkfifo "$T/server-in"
exec {feed}<> "$T/server-in"   # the listener's stdin, written when the test says
"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > "$T/server-got" {feed}>&- & track $!
server=$LAST_PID
wait_for_socket "$T/s.sock"

cat "$T/up" | within 10 "$FERRY" "unix:$T/s.sock" > "$T/client-got" {feed}>&- & track $!
client=$LAST_PID
has_size () { [ "$(stat -c %s "$1")" -eq "$2" ]; }
wait_until 10 has_size "$T/server-got" $((3 * 1024 * 1024))
kill -0 "$server" 2>/dev/null || fail "the listener ended at the client's half-close"
echo "after the half-close" >&"$feed"
exec {feed}>&-                 # the listener's stdin EOF
rc=0; wait_exit 10 "$client" || rc=$?
assert_eq 0 "$rc" "client exit code"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "listener exit code"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_eq "after the half-close" "$(cat "$T/client-got")" "what the listener sent after the client's half-close"
[ ! -e "$T/s.sock" ] || fail "the listener left its socket file behind"

rc=0
: | within 10 "$FERRY" "unix:$T/s.sock" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "cannot connect to '$T/s.sock'"
