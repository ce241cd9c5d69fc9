#!/usr/bin/env bash
# A remote copy whose link freezes (the sshd session stopped: no RST, as
# when a NAT drops its state) ends by itself, exit 25 (the link lost), the keepalives named in one line:
# a download and an upload with no option (the default ssh keepalive, every
# 15 s, 3 unanswered: within about a minute), an upload with --keepalive=1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need pgrep
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
REMOTE_HELPER=$T/helper
host=$(id -un)@127.0.0.1:$SSHD_PORT

# Once the remote ferry runs, stop sshd's processes for the session.
freezer () {
    local session frozen
    wait_until 20 test -s "$T/remote.pid"
    sleep 1
    session=$(pgrep -P "$SSHD_PID" | xargs | tr ' ' ,)
    frozen="${session//,/ } $(pgrep -P "$session" | xargs)"
    echo "$frozen" > "$T/frozen"
    kill -STOP $frozen
}
thaw () { [ ! -s "$T/frozen" ] || kill -CONT $(cat "$T/frozen") 2> /dev/null || true; }
cleanup_fn thaw

# The ways: a download and an upload (up-default) with no option, an upload
# with --keepalive=1 (up); nbd-remote-frozen-upload runs up-default, each
# test within its timeout.
for way in ${FROZEN_WAYS:-down up}; do
    slow_exports_alive
    rm -f "$T/remote.pid" "$T/frozen"
    freezer &
    start=$SECONDS
    case $way in
    down) remote_copy down "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K
          bound=80 ;;
    up-default) remote_copy up "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K
          bound=80 ;;
    up) remote_copy up "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K --keepalive=1
          bound=15 ;;
    esac
    wait $!
    took=$((SECONDS - start))
    thaw
    assert_eq 25 "$REMOTE_RC" "$way: exit code"
    assert_eq 1 "$(wc -l < "$T/remote.err")" "$way: lines"
    [ "$took" -le "$bound" ] || fail "$way: took $took s, more than $bound"
    assert_contains "$T/remote.err" "ssh connection to $host lost: the server answered none of 3 keepalives" \
        "$way: the message"
done
