#!/usr/bin/env bash
# The server sends 160 KiB and closes while ferry, blocked on a stdout
# nobody reads yet (buffer 128 KiB, plus 64 KiB in the pipe; the rest fits
# in the socket), has stopped reading the socket: poll
# reports HUP on the socket that ferry did not ask for.  That must not make
# it spin (CPU under 5% over 1 s); once stdout drains, every byte arrives
# and ferry exits 0.
. "$(dirname "$0")/lib.sh"
need socat
make_data down $((160 * 1024))
silent_fifo in
mkfifo "$T/out"
listen_addresses unix
bg socat -u "OPEN:$T/down" "$SOCAT_LISTEN"
server=$LAST_PID
wait_for_listener unix

"$FERRY" -b 128K "$FERRY_ADDR" < "$T/in" > "$T/out" 2> "$T/err" & track $!
ferry=$LAST_PID
sh -c 'while [ ! -e "$1/go" ]; do sleep 0.05; done; exec cat' sh "$T" \
    < "$T/out" > "$T/got" & track $!
reader=$LAST_PID
wait_exit 10 "$server" || fail "socat server exited $?"   # all sent, closed
sleep 0.25
cpu=$(cpu_percent "$ferry" 1)
touch "$T/go"
[ "$cpu" -lt 5 ] || fail "ferry used $cpu% CPU while its closed socket waited"

rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code"
wait_exit 10 "$reader" || fail "reader exited $?"
assert_same_file "$T/down" "$T/got" "download"
echo "CPU with a closed, unread socket: $cpu%"
