#!/usr/bin/env bash
# The server sends 4 MiB and close()s while ferry's stdin stays open and
# idle.  Over TCP that FIN looks exactly like a half-close until ferry
# writes, so ferry waits for stdin's EOF (as ssh -W and nc do): it is still
# running 2 s later, and exits 0 once stdin closes, with all 4 MiB
# delivered.  With --half-close-timeout=1 it exits on its own, 1 s after
# the relay went idle.
. "$(dirname "$0")/lib.sh"
make_data down $((4 * 1024 * 1024))
listen_addresses tcp

silent_fifo in
writer=$LAST_PID
eos_peer listen "$FERRY_ADDR" send-close "$T/down"
server=$LAST_PID
wait_for_listener tcp
"$FERRY" "$FERRY_ADDR" < "$T/in" > "$T/got" 2> "$T/err" & track $!
ferry=$LAST_PID
wait_exit 10 "$server" || fail "server exited $?"
sleep 2
kill -0 "$ferry" 2>/dev/null || fail "ferry ended 2 s after the FIN, with stdin open: $(cat "$T/err")"
assert_same_file "$T/down" "$T/got" "download before the close"
kill "$writer"                # stdin's EOF
rc=0; wait_exit 5 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code after stdin's EOF ($(cat "$T/err"))"

silent_fifo in2
eos_peer listen "$FERRY_ADDR" send-close "$T/down"
server=$LAST_PID
wait_for_listener tcp
start=$(date +%s%N)
rc=0
within 10 "$FERRY" --half-close-timeout=1 "$FERRY_ADDR" < "$T/in2" > "$T/got" 2> "$T/err" || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
assert_eq 0 "$rc" "--half-close-timeout=1: ferry exit code ($(cat "$T/err"))"
assert_same_file "$T/down" "$T/got" "--half-close-timeout=1: download"
wait_exit 5 "$server" || fail "server exited $?"
# 1 s of idle after the download, which takes milliseconds on loopback; a
# loaded machine may add a little.
[ "$ms" -ge 1000 ] && [ "$ms" -lt 3000 ] ||
    fail "--half-close-timeout=1: ferry exited after $ms ms, not about 1 s"
echo "with --half-close-timeout=1, ferry exited after $ms ms"
