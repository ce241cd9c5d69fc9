#!/usr/bin/env bash
# The remote stream mode's exit code says which side failed: 3 and 20 to
# 23 the local half, 30 to 33 the remote half (its 3 or 20, 21 to 23), 24
# a remote half that could not run; the remote's messages are ferry's, naming the host.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve_src () { serve src sparse-random size=8M seed=5 percent=50; src_pid=$LAST_PID; }
# A silenced local sender may take nbdkit with it (serve_again_if_dead).
src_alive () { serve_again_if_dead src "$src_pid" serve_src; }
serve_src
serve small memory size=1M
host=root@127.0.0.1:$SSHD_PORT

# One line per cause: neither the local half nor the relay adds a line
# about the stream that the failing half closed.
expect () {  # RC TEXT WHAT
    assert_eq "$1" "$REMOTE_RC" "$3: exit code"
    assert_contains "$T/remote.err" "$2" "$3: message"
    ! grep -E 'Broken pipe|Connection reset|cannot (read from|write to)|cannot write the stream' \
        "$T/remote.err" || fail "$3: a line about the lost stream"
}

remote_copy up "$(uri src)" "$(uri missing)"
expect 30 "ferry: $host: cannot connect to $(uri missing): " "upload, remote DST missing"
# The local sender's line alone: the channel closes before the remote
# receiver's line about the empty stream ("stream truncated in the stream
# header") can come back.
for streams in 1 2; do
    remote_copy up "$(uri missing)" "$(uri small)" --streams=$streams
    expect 3 "ferry: cannot connect to $(uri missing): " "upload, local SRC missing"
    assert_eq "ferry: cannot connect to $(uri missing): nbd_connect_uri: connect: No such file or directory" \
        "$(cat "$T/remote.err")" "upload, local SRC missing, --streams=$streams: the one line"
done
# Three times: the remote receiver exits while the channel's window is
# shut, and a relay that waited for it to open hung (about 1 run in 10).
for _ in 1 2 3; do
    src_alive
    remote_copy up "$(uri src)" "$(uri small)"
    expect 33 "ferry: $host: $(uri small) is 1048576 bytes, smaller than the stream's image of 8388608 bytes" \
        "upload, remote DST too small"
    assert_eq 1 "$(wc -l < "$T/remote.err")" "upload, remote DST too small: one line"
done
# The local receiver's stream ends in its header: the remote's line says
# why, and the receiver's own ("stream truncated") would repeat it.
for streams in 1 2; do
    who=$host; [ $streams = 1 ] || who="$host (stream 1)"
    remote_copy down "$(uri missing)" "$(uri small)" --streams=$streams
    expect 30 "ferry: $who: cannot connect to $(uri missing): " "download, remote SRC missing"
    assert_eq "ferry: $who: cannot connect to $(uri missing): nbd_connect_uri: connect: No such file or directory" \
        "$(cat "$T/remote.err")" "download, remote SRC missing, --streams=$streams: the one line"
done
src_alive
remote_copy down "$(uri src)" "$(uri small)"
expect 23 "ferry: $(uri small) is 1048576 bytes, smaller than the stream's image of 8388608 bytes" \
    "download, local DST too small"
REMOTE_HELPER=$T/no-such-ferry
src_alive
remote_copy up "$(uri src)" "$(uri small)"
expect 24 "ferry: $host: the remote half exited with status 127 (ran: " "remote helper missing"

# Usage errors: exit 2, one line, nothing run.
usage () {  # TEXT ARGS...
    local text=$1 rc=0; shift
    "$FERRY" "$@" 2> "$T/usage.err" || rc=$?
    assert_eq 2 "$rc" "usage: $*"
    assert_eq "ferry: $text" "$(cat "$T/usage.err")" "usage: $*: message"
}
usage "--remote-nbd-receive goes with --nbd-send, --remote-nbd-send with --nbd-receive; see 'ferry --help'" \
    --nbd-receive=x --remote-nbd-receive=y ssh://h
usage "--remote-nbd-send and --remote-nbd-receive take one ADDRESS, ssh://[USER@]HOST[:PORT]; see 'ferry --help'" \
    --nbd-send=x --remote-nbd-receive=y
usage "invalid address 'ssh://h/p': expected ssh://[USER@]HOST[:PORT], without a socket path or tcp=" \
    --nbd-send=x --remote-nbd-receive=y ssh://h/p
usage "invalid address 'unix:/x': --remote-nbd-send and --remote-nbd-receive take ssh://[USER@]HOST[:PORT]" \
    --nbd-send=x --remote-nbd-receive=y unix:/x
usage "--raw does not go with --remote-nbd-send or --remote-nbd-receive; see 'ferry --help'" \
    --raw --nbd-send=x --remote-nbd-receive=y ssh://h
