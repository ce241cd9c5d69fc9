#!/usr/bin/env bash
# 2000 request/reply round trips of 64 bytes through ferry, over UNIX and
# TCP, against a socat echo server.  A blocking splice from the socket into
# ferry's pipe would hold the pipe's lock while it waits for the reply and
# deadlock the exchange; ferry polls first and splices non-blocking.
# (Under FERRY_NO_SPLICE=1 the same exchange goes through the copy path.)
. "$(dirname "$0")/lib.sh"
need socat python3

cat > "$T/pingpong.py" <<'PY'
import os, subprocess, sys
rounds = 2000
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for i in range(rounds):
    msg = (b"%06d" % i) * 10 + b"ping"
    os.write(p.stdin.fileno(), msg)
    got = b""
    while len(got) < len(msg):
        chunk = os.read(p.stdout.fileno(), len(msg) - len(got))
        if not chunk:
            sys.exit("round %d: ferry closed stdout after %d bytes" % (i, len(got)))
        got += chunk
    if got != msg:
        sys.exit("round %d: sent %r, got %r" % (i, msg, got))
p.stdin.close()
if p.stdout.read() != b"":
    sys.exit("bytes after the last reply")
sys.exit(p.wait())
PY

bg socat "UNIX-LISTEN:$T/echo.sock" EXEC:cat
wait_for_socket "$T/echo.sock"
within 60 python3 "$T/pingpong.py" "$FERRY" "unix:$T/echo.sock" ||
    fail "ping-pong over UNIX exited $?"

port=$(free_port)
bg socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" EXEC:cat
wait_for_port "$port"
within 60 python3 "$T/pingpong.py" "$FERRY" "127.0.0.1:$port" ||
    fail "ping-pong over TCP exited $?"
