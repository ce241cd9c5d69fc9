#!/usr/bin/env bash
# ferry's stdout reader takes the first 1 MiB (enough to block ferry's
# writes at least once, so stdout has had a watch) and exits while ferry has
# nothing more to write: poll reports POLLERR on stdout that ferry did not
# ask for.  That must not make it spin (CPU from /proc under 5% over 1 s);
# when more data arrives, the write fails and ferry exits 4 naming stdout,
# the reason and the counts.
. "$(dirname "$0")/lib.sh"
make_data first $((1024 * 1024))
mkfifo "$T/server-in"
exec {feed}<> "$T/server-in"   # what the server sends, when the test says
"$FERRY" -l "unix:$T/s.sock" < "$T/server-in" > /dev/null & track $!
wait_for_socket "$T/s.sock"

silent_fifo in
mkfifo "$T/out"
"$FERRY" "unix:$T/s.sock" < "$T/in" > "$T/out" 2> "$T/err" & track $!
ferry=$LAST_PID
head -c $((1024 * 1024)) < "$T/out" > "$T/got" & track $!
reader=$LAST_PID
cat "$T/first" >&"$feed"
wait_exit 10 "$reader" || fail "reader exited $?"
assert_same_file "$T/first" "$T/got" "the first 1 MiB"
sleep 0.25
cpu=$(cpu_percent "$ferry" 1)
[ "$cpu" -lt 5 ] || fail "ferry used $cpu% CPU with a closed, idle stdout"
kill -0 "$ferry" 2>/dev/null || fail "ferry exited before it had anything to write: $(cat "$T/err")"

echo "late data" >&"$feed"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_ferry_error 4 "$rc" "$T/err" "ferry: cannot write to stdout: Broken pipe (1048576 bytes delivered, 10 buffered bytes not delivered)"
echo "CPU with a closed stdout: $cpu%"
