#!/usr/bin/env bash
# issue 25, item 1: the ssh session dies while ferry's down buffer is full
# (stdout not read) and nothing waits to go up.  What ferry had read is
# still delivered once stdout is read again, then the relay ends, with one
# line naming the connection and a non-zero exit; it must not wait for
# ever for a session that can no longer wake it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat dd cmp

start_sshd main /usr/bin:/bin
make_data down $((96 * 1024 * 1024))
bg socat -u "OPEN:$T/down" "UNIX-LISTEN:$T/s.sock"
wait_for_socket "$T/s.sock"
silent_fifo in
mkfifo "$T/out"

env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$(ssh_base)$T/s.sock?proxy=direct&keyfile=$SSH_KEY" \
    < "$T/in" > "$T/out" 2> "$T/err" & track $!
ferry=$LAST_PID
sh -c 'while [ ! -e "$1/read" ]; do sleep 0.05; done; exec cat' sh "$T" < "$T/out" > "$T/got" & track $!
reader=$LAST_PID

stalled () { [ "$(cpu_percent "$1" 0.5)" -eq 0 ]; }
wait_until 30 stalled "$ferry"
# The session's sshd processes (children of the listener), not the listener.
pkill -KILL -P "$SSHD_PID" || fail "no sshd session to kill"
sleep 0.5
touch "$T/read"

rc=0; wait_exit 20 "$ferry" || rc=$?
[ "$rc" -ne 0 ] || fail "ferry exited 0 though the session died mid-download"
wait_exit 10 "$reader" || fail "reader exited $?"
got=$(stat -c %s "$T/got")
[ "$got" -gt 0 ] || fail "nothing was delivered"
cmp -n "$got" "$T/down" "$T/got" || fail "what was delivered is not the start of the data"
[ "$(wc -l < "$T/err")" -eq 1 ] || fail "expected one line on stderr: $(cat "$T/err")"
grep -q "ssh connection to .*127.0.0.1" "$T/err" || fail "the line does not name the connection: $(cat "$T/err")"
echo "exit $rc, $got bytes delivered before the cut: $(cat "$T/err")"
