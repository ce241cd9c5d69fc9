#!/usr/bin/env bash
# --connect-timeout bounds connecting to a server that never speaks ssh
# (exit 3); --keepalive=SECS ends a session whose server stopped answering
# (3 unanswered keepalives) with a message, instead of hanging.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat pgrep python3

# A TCP server that never says anything: it listens and never accepts (the
# kernel completes the handshake).
port=$(free_port)
bg python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(60)' "$port"
wait_for_port "$port"
url="ssh://$(id -un)@127.0.0.1:$port/x.sock?keyfile=$SSH_KEY"
start=$(date +%s)
rc=0
ferry_ssh --connect-timeout=2 "$url" < /dev/null 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "silent server: exit code"
assert_contains "$T/err" "ferry: cannot connect to '$url': " "silent server: message"
[ $(( $(date +%s) - start )) -lt 10 ] || fail "silent server: --connect-timeout=2 took too long"

start_sshd main /usr/bin:/bin
bg socat "UNIX-LISTEN:$T/echo.sock,fork" EXEC:cat
echo_server=$LAST_PID
wait_for_socket "$T/echo.sock"
mkfifo "$T/in"
bg sh -c 'exec sleep 60 > "$1"' sh "$T/in"
# (A background job's stdin would be /dev/null: the redirection is inside.)
bg sh -c 'exec "$@" < "$0" > /dev/null 2> "$0.err"' "$T/in" \
    env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --keepalive=1 \
    "$(ssh_base)$T/echo.sock?keyfile=$SSH_KEY"
ferry=$LAST_PID
# Once the channel is up (the echo server forked for it), freeze the
# server's side of the session: sshd's per-connection processes.
for _ in $(seq 200); do
    pgrep -P "$echo_server" > /dev/null && break
    sleep 0.1
done
session=$(pgrep -P "$SSHD_PID" | xargs | tr ' ' ,)
[ -n "$session" ] || fail "no sshd session process"
frozen="${session//,/ } $(pgrep -P "$session" | xargs)"
sleep 1
kill -STOP $frozen
rc=0
within 20 tail --pid="$ferry" -f /dev/null || rc=$?
kill -CONT $frozen
kill $frozen 2> /dev/null || true
assert_eq 0 "$rc" "ferry ended after the server stopped answering"
wait "$ferry" && fail "ferry exited 0 with a dead session"
assert_contains "$T/in.err" "ssh connection to $(id -un)@127.0.0.1:$SSHD_PORT failed: the server answered none of 3 keepalives" \
    "keepalive: message"
