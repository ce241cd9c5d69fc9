#!/usr/bin/env bash
# The stdout reader pauses for 2 s while the server has 32 MiB to send.
# Meanwhile ferry must stop reading the socket: its RSS stays under 10 MiB,
# far below the 32 MiB it would take to read it all (6.9 MiB measured; 8.2
# while json-glib, for --stats=json, mapped gio and its libraries into every
# ferry), and it uses under 5% CPU (both from /proc).  Then everything
# arrives.
. "$(dirname "$0")/lib.sh"
need socat
make_data down $((32 * 1024 * 1024))
silent_fifo in
mkfifo "$T/out"
listen_addresses unix
bg socat -u "OPEN:$T/down" "$SOCAT_LISTEN"
wait_for_listener unix

"$FERRY" -v "$FERRY_ADDR" < "$T/in" > "$T/out" 2> "$T/err" & track $!
ferry=$LAST_PID
# The reader opens the FIFO at once but reads only when told to.
sh -c 'while [ ! -e "$1/go" ]; do sleep 0.05; done; exec cat' sh "$T" \
    < "$T/out" > "$T/got" & track $!
reader=$LAST_PID

# The buffers fill: ferry stops reading, and bytes wait in its socket.
wait_until 10 has_unread_socket "$ferry"
sleep 0.25
cpu_pct=$(cpu_percent "$ferry" 1)
rss=$(rss_kib "$ferry")
sleep 0.5
touch "$T/go"

limit=$(rss_limit 10240)
[ "$rss" -lt "$limit" ] || fail "RSS while blocked is $rss KiB, over $limit KiB"
[ "$cpu_pct" -lt 5 ] || fail "CPU while blocked was $cpu_pct%, over 5%"

rc=0; wait_exit 30 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code"
wait_exit 10 "$reader" || fail "reader exited $?"
assert_same_file "$T/down" "$T/got" "download"
# ferry's own account: it paused its socket reader on a full buffer.
grep -Eq 's.sock -> stdout: 33554432 bytes .*reader paused [1-9][0-9]* times' "$T/err" ||
    fail "no backpressure in ferry's statistics: $(cat "$T/err")"
echo "blocked: RSS $rss KiB, CPU $cpu_pct%"
