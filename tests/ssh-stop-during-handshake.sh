#!/usr/bin/env bash
# A relay over ssh:// to a server that accepts the TCP connection and then
# says nothing: ferry waits in the ssh handshake (the server's banner).
# SIGTERM, SIGINT and SIGHUP each end it at once with 128 + the signal and
# one line (it waited for the handshake's 10 s timeout, then exited 3);
# with --connect-timeout=1 it gives up after about a second, exit 3.
. "$(dirname "$0")/lib.sh"
need python3 ss

port=$(free_port)
python3 - "$port" > "$T/silent.ready" <<'PY' & track $!
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("ready", flush=True)
held = []
while True:
    held.append(s.accept()[0])     # accepted, and never a byte sent
PY
wait_until 10 grep -q ready "$T/silent.ready"

address="ssh://root@127.0.0.1:$port/run/x.sock"
in_handshake () { [ -n "$(ss -Htn state established "dport = :$port")" ]; }
stop_while_connecting "$address" "in the handshake" in_handshake HOME="$T"

rc=0
within 5 env HOME="$T" "$FERRY" --connect-timeout=1 "$address" < /dev/null 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "ferry: cannot connect to '$address': timed out"
