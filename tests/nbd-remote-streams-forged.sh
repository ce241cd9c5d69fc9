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
cat > "$T/helper" <<HELPER
#!/bin/sh
if mkdir "$T/forged" 2> /dev/null; then
    exec python3 "$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py" remote-sender early-end \
        $((9 << 30))
fi
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"
REMOTE_HELPER=$T/helper
start=$SECONDS
remote_copy down "$(uri src)" "$(uri dst)" --streams=2
[ $((SECONDS - start)) -le 30 ] || fail "took $((SECONDS - start)) s"
# 21, the local half's: the remote half, whose channel was closed on it
# (perhaps before its exit status came), is not counted as failed.
assert_eq 21 "$REMOTE_RC" "exit code"
assert_eq "ferry: the sender ended the stream where the range at offset 0 (134217728 bytes) was asked for; the ranges $(uri dst) answered for are complete (flushed)" \
    "$(cat "$T/remote.err")" "the one line"
