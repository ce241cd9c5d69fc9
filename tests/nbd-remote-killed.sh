#!/usr/bin/env bash
# The remote ferry SIGKILLed mid-copy, each way: the local ferry exits
# within seconds with 24 and a line naming the host, and leaves no local
# half behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
REMOTE_HELPER=$T/helper
host=root@127.0.0.1:$SSHD_PORT

killer () {
    wait_until 20 test -s "$T/remote.pid"
    sleep 1
    kill -9 "$(cat "$T/remote.pid")"
}
for way in up down; do
    rm -f "$T/remote.pid"
    killer &
    start=$SECONDS
    if [ $way = up ]; then
        remote_copy up "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K
    else
        remote_copy down "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K
    fi
    wait $!
    assert_eq 24 "$REMOTE_RC" "$way: exit code"
    assert_contains "$T/remote.err" "ferry: $host: the remote half was killed by SIGKILL (ran: " \
        "$way: message"
    # One line for the one cause: neither the local sender nor the relay
    # adds one about the stream it lost (a local receiver says how far its
    # destination is complete).
    ! grep -F 'Broken pipe' "$T/remote.err" || fail "$way: a line about the lost stream"
    [ $((SECONDS - start)) -le 10 ] || fail "$way: took $((SECONDS - start)) s"
    ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null ||
        fail "$way: a local half is left: $(pgrep -af -- "--remote-helper=$T/helper")"
done

# The local ferry SIGKILLed mid-upload: its local half and the remote
# ferry end by themselves (the remote one flushes and says where the
# destination is complete).
rm -f "$T/remote.pid"
env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" --streams=1 --nbd-send="$(uri src)" \
    --remote-nbd-receive="$(uri dst)" --request-size=256K --in-flight=256K \
    "$(ssh_base)?keyfile=$SSH_KEY" 2> "$T/local-killed.err" &
local_pid=$!
wait_until 20 test -s "$T/remote.pid"
sleep 1
kill -9 "$local_pid"
wait "$local_pid" || true
gone () { ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null && ! kill -0 "$(cat "$T/remote.pid")" 2> /dev/null; }
wait_until 10 gone
