#!/usr/bin/env bash
# --idle-timeout in the remote copy: a copy whose source stalls (3 s per
# read, so nothing crosses for longer than the timeout) ends with the
# documented exit 5 (it was 24), each way, and one line that says why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve dst memory size=16M
for way in up down; do
    # Its own source each time: this nbdkit's delay filter may abort when a
    # client goes in the middle of a delay.
    serve "src-$way" --filter=delay pattern size=16M rdelay=3
    start=$SECONDS
    remote_copy $way "$(uri "src-$way")" "$(uri dst)" --idle-timeout=1
    assert_eq 5 "$REMOTE_RC" "$way: exit code"
    [ $((SECONDS - start)) -le 10 ] || fail "$way: took $((SECONDS - start)) s"
    assert_contains "$T/remote.err" "ferry: no traffic for 1 s, giving up" "$way: the message"
    assert_eq 1 "$(wc -l < "$T/remote.err")" "$way: one line"
done
