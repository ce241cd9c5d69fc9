#!/usr/bin/env bash
# While ferry waits with nothing to do, it sleeps in poll: stdin at EOF (a
# pipe that reports HUP forever) and the half-closed socket must not make
# the main loop spin.  The server reads the request to EOF, stays silent
# for 3 s, then replies; ferry's CPU time over the whole run stays far
# below the wall time a spin would burn.
. "$(dirname "$0")/lib.sh"
need socat

bg socat -t 10 "UNIX-LISTEN:$T/s.sock" SYSTEM:"cat > '$T/got'; sleep 3; echo reply"
wait_for_socket "$T/s.sock"
printf 'request' | within 30 /usr/bin/time -f '%U %S' -o "$T/cpu" \
    "$FERRY" "unix:$T/s.sock" > "$T/out" || fail "ferry exited $?"
assert_eq reply "$(cat "$T/out")" "reply after the silence"
assert_eq request "$(cat "$T/got")" "request"
read -r user sys < "$T/cpu"
awk -v u="$user" -v s="$sys" 'BEGIN { exit !(u + s < 0.5) }' ||
    fail "ferry used ${user}s user + ${sys}s system CPU while idle for 3 s (spinning?)"
