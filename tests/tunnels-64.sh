#!/usr/bin/env bash
# 64 separate stdio relays at once (64 ferry processes, each with pipes as
# stdin and stdout, as under sshd) to one echo server, 64 MiB each way
# each: every stream intact (tests/load-driver.c checks each byte against
# a pattern of its own), every ferry exits 0.
. "$(dirname "$0")/lib.sh"
: "${FERRY_LOAD_DRIVER:?}"
relays=${TUNNELS:-64} bytes=${TUNNEL_BYTES:-64M}

bg "$FERRY_LOAD_DRIVER" echo "$T/s.sock"
wait_for_socket "$T/s.sock" "$LAST_PID"
within 600 "$FERRY_LOAD_DRIVER" tunnels "$relays" "$bytes" -- "$FERRY" "unix:$T/s.sock" |
    tee "$T/load.out"
assert_eq 0 "${PIPESTATUS[0]}" "load driver exit code"
assert_contains "$T/load.out" "$relays streams intact" "streams intact"
