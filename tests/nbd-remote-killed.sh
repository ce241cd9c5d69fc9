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

# The remote ferry has read or written a MiB of its stream (read(2) and
# write(2) on stdin and stdout; libnbd's send(2) is not counted), so that
# a local receiver has something to report.
moved_a_mib () { [ "$(awk '/^[rw]char:/ { n += $2 } END { print n + 0 }' "/proc/$1/io" 2>/dev/null)" -gt 1048576 ]; }
killer () {
    wait_until 20 test -s "$T/remote.pid"
    sleep 1
    wait_until 20 moved_a_mib "$(cat "$T/remote.pid")"
    kill -9 "$(cat "$T/remote.pid")"
}
for way in up down; do
    slow_exports_alive
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
    # One line for the one cause: neither the local sender nor the relay
    # adds one about the stream it lost; a local receiver's "stream
    # truncated" becomes where its destination is complete, on that line.
    if [ $way = up ]; then
        ran="'$T/helper' '--nbd-receive=$(uri dst)'" where=
    else
        ran="'$T/helper' '--nbd-send=$(uri src)'" where="; $(uri dst) is complete up to offset N (flushed)"
    fi
    assert_eq "ferry: $host: the remote half was killed by SIGKILL (ran: $ran '--request-size=262144' '--in-flight=262144')$where" \
        "$(sed -E 's/(complete up to offset )[0-9]+ /\1N /' "$T/remote.err")" "$way: the one line"
    if [ $way = down ]; then
        # What it says is complete is the source's.
        complete=$(sed -nE 's/.* complete up to offset ([0-9]+) .*/\1/p' "$T/remote.err")
        rm -f "$T/src.raw" "$T/dst.raw"
        slow_exports_alive
        nbdcopy "$(uri src)" "$T/src.raw"
        nbdcopy "$(uri dst)" "$T/dst.raw"
        cmp -n "$complete" "$T/src.raw" "$T/dst.raw" || fail "$way: DST differs before offset $complete"
        rm -f "$T/src.raw" "$T/dst.raw"
    fi
    [ $((SECONDS - start)) -le 10 ] || fail "$way: took $((SECONDS - start)) s"
    ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null ||
        fail "$way: a local half is left: $(pgrep -af -- "--remote-helper=$T/helper")"
done

# The local ferry SIGKILLed mid-upload: its local half and the remote
# ferry end by themselves (the remote one flushes and says where the
# destination is complete).
slow_exports_alive
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
