#!/usr/bin/env bash
# --streams=2 downloading, one remote ferry forged: it answers its first
# REQUEST (for a range) with END.  The local half refuses the END, and the
# copy fails at once with a line naming the range, also when the
# image has more ranges than the controller keeps ahead (64: 9 GiB of
# nbdkit null), where the other stream used to wait for ever for the range
# that was never done.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3
start_sshd main /usr/bin:/bin
serve src null size=9G
serve dst memory size=9G
# The remote halves note their PIDs: the test ends only once they have.
# The real one may still be connecting to SRC when the copy fails, and
# nbdkit, stopped by the cleanup meanwhile, would never finish that
# handshake, nor exit while it waits (cleanup waits for nbdkit).
cat > "$T/helper" <<HELPER
#!/bin/sh
echo \$\$ >> "$T/remote.pids"
if mkdir "$T/forged" 2> /dev/null; then
    exec python3 "$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py" remote-sender early-end \
        $((9 << 30))
fi
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"
kill_remote_halves () {
    local p
    for p in $(cat "$T/remote.pids" 2> /dev/null); do kill -KILL "$p" 2> /dev/null || true; done
}
cleanup_fn kill_remote_halves
REMOTE_HELPER=$T/helper
start=$SECONDS
remote_copy down "$(uri src)" "$(uri dst)" --streams=2
[ $((SECONDS - start)) -le 30 ] || fail "took $((SECONDS - start)) s"
# 21, the local half's: the remote half, whose channel was closed on it
# (perhaps before its exit status came), is not counted as failed.
assert_eq 21 "$REMOTE_RC" "exit code"
assert_eq "ferry: the sender ended the stream where the range at offset 0 (134217728 bytes) was asked for; the ranges $(uri dst) answered for are complete (flushed)" \
    "$(cat "$T/remote.err")" "the one line"
gone () { local p; for p in $(cat "$T/remote.pids"); do ! kill -0 "$p" 2> /dev/null || return 1; done; }
for _ in $(seq 200); do gone && break; sleep 0.05; done
gone || { kill_remote_halves; fail "a remote half still ran 10 s after the copy"; }
