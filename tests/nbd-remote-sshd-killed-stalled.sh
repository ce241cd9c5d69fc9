#!/usr/bin/env bash
# The sshd session of a --streams=1 upload killed while one half is
# stalled, so that the relay has nothing to do when the session dies
# (issue 25, item 1):
#   window-shut   the remote receiver is stopped (SIGSTOP): the channel's
#                 window closes, the relay holds bytes it cannot write, and
#                 the local sender blocks in its write, at the same offset;
#   sender-idle   the local sender is stopped: the relay has nothing to
#                 send and nothing comes back.
# Either way the copy ends within 20 s with exit 25 and one line naming the
# host, and leaves no local half behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need pkill pgrep
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
REMOTE_HELPER=$T/helper
host=root@127.0.0.1:$SSHD_PORT

local_sender () {  # the forked local half: a ferry whose parent is the copy's ferry
    local p parent
    for p in $(pgrep -x ferry); do
        parent=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2> /dev/null)
        [ -n "$parent" ] && [ "$(cat "/proc/$parent/comm" 2> /dev/null)" = ferry ] &&
            grep -qF -- "--remote-helper=$T/helper" "/proc/$p/cmdline" 2> /dev/null && echo "$p"
    done
    return 0
}
wchar () { awk '/^wchar:/ { print $2 }' "/proc/$1/io" 2> /dev/null; }
# Until CMD succeeds, for at most SECS; false if it never did.
within_secs () {  # SECS CMD...
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.05; done
}
# The local sender has written nothing for a second: blocked in its write.
sender_blocked () {
    local before
    before=$(wchar "$1")
    sleep 1
    [ -n "$before" ] && [ "$before" = "$(wchar "$1")" ]
}

# In the background: stall CASE's half, then kill the session; what went
# wrong, in $T/stall.err.
stall_then_kill () {  # CASE
    local sender
    within_secs 20 remote_moved 393216 && sender=$(local_sender) && [ -n "$sender" ] ||
        { echo "the copy never got going" > "$T/stall.err"; return; }
    case $1 in
    window-shut)
        kill -STOP "$(cat "$T/remote.pid")"
        within_secs 20 sender_blocked "$sender" ||
            { echo "the local sender never blocked" > "$T/stall.err"; return; } ;;
    sender-idle)
        kill -STOP "$sender"
        sleep 0.5 ;;
    esac
    pkill -KILL -P "$SSHD_PID"
}

for case in window-shut sender-idle; do
    slow_exports_alive
    rm -f "$T/remote.pid" "$T/remote.pids" "$T/stall.err"
    stall_then_kill "$case" &
    stall=$!
    start=$SECONDS
    REMOTE_WITHIN=60 remote_copy up "$(uri src)" "$(uri dst)" --request-size=256K \
        --in-flight=256K 2> /dev/null
    wait "$stall"
    # The stopped remote receiver outlives its session: it goes here.
    kill -KILL "$(cat "$T/remote.pid")" 2> /dev/null || true
    [ ! -s "$T/stall.err" ] || fail "$case: $(cat "$T/stall.err")"
    assert_link_lost "$case" "$start" 20 "$host"
    ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null ||
        fail "$case: a local half is left: $(pgrep -af -- "--remote-helper=$T/helper")"
    echo "$case ($((SECONDS - start)) s): $(cat "$T/remote.err")"
done
