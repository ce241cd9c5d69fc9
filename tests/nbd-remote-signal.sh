#!/usr/bin/env bash
# SIGTERM to the local ferry mid-upload and mid-download: the local half
# stops by the stream mode's rules, the remote side's last line still
# comes back naming the host, and ferry exits 143 within seconds, leaving
# no process behind.
# Then the cuts: a second signal, or --drain-timeout, ends it at once with
# one line.
#
# The test sshd logs in as root, and OpenSSH's sshd refuses the "signal"
# request for root's sessions (no privilege-separated child): the remote
# half then ends as the local one stops, through the stream (upload) or
# its closed channel (download).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
host=root@127.0.0.1:$SSHD_PORT

# Start a copy (up or down, extra options after) in the background, with
# SIGINT and SIGQUIT not ignored ($DFL): PID in $pid, stderr in $T/WAY.err.
launch_copy () {  # WAY [OPTIONS...]
    local way=$1 args; shift
    slow_exports_alive
    rm -f "$T/remote.pid"
    if [ "$way" = up ]; then
        args=(--nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst)")
    else
        args=(--nbd-receive="$(uri dst)" --remote-nbd-send="$(uri src)")
    fi
    $DFL HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" --streams=1 \
        "${args[@]}" --request-size=256K --in-flight=256K "$@" \
        "$(ssh_base)?keyfile=$SSH_KEY" 2> "$T/$way.err" &
    pid=$!
}

# launch_copy, and wait until the copy runs.
start_copy () {  # WAY [OPTIONS...]
    launch_copy "$@"
    wait_until 20 test -s "$T/remote.pid"
    sleep 0.5
}

# Whether the process's /proc mask FIELD (SigBlk, SigCgt, SigIgn) holds
# all the stop signals.
stop_signals_in () {  # PID FIELD
    local mask sig
    mask=$(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status")
    for sig in TERM INT HUP QUIT; do
        (( (16#$mask >> ($(kill -l $sig) - 1)) & 1 )) || return 1
    done
}

# Wait for it: exit code RC within SECS, then nothing of it is left.
expect_end () {  # WHAT RC SECS
    local rc=0 start=$SECONDS
    wait_exit "$3" "$pid" || rc=$?
    cat "$T/$way.err" >&2
    assert_eq "$2" "$rc" "$1: exit code"
    [ $((SECONDS - start)) -le "$3" ] || fail "$1: took $((SECONDS - start)) s"
    gone () { ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null &&
              ! kill -0 "$(cat "$T/remote.pid")" 2> /dev/null; }
    wait_until 5 gone
    ! grep -F 'Broken pipe' "$T/$way.err" || fail "$1: a line about the lost stream"
}

for way in up down; do
    start_copy $way
    half=$(pgrep -P "$pid")
    stop_signals_in "$half" SigCgt || fail "$way: the running local half does not catch the stop signals"
    ! stop_signals_in "$half" SigBlk || fail "$way: the running local half blocks the stop signals"
    kill -TERM "$pid"
    expect_end "$way, SIGTERM" 143 5
    # The local half is the stream mode, which stops as its own signal
    # rules say: the sender on a record's boundary, the receiver flushed.
    if [ $way = up ]; then
        assert_contains "$T/$way.err" "ferry: stopped by SIGTERM; the image was sent up to offset" "$way: local line"
        # The STOP record after the last whole one tells the remote receiver
        # (sshd refuses root's "signal" request).
        assert_contains "$T/$way.err" "ferry: $host: the sender was stopped by SIGTERM; $(uri dst) is complete up to offset" \
            "$way: the remote receiver's line"
    else
        assert_contains "$T/$way.err" "ferry: stopped by SIGTERM; $(uri dst) is complete up to offset" "$way: local line"
    fi
    assert_contains "$T/$way.err" "ferry: $host: " "$way: a line from the remote side"
done

# A SIGTERM as the copy starts, when the local half may have its go but
# not its handlers yet (it starts with the stop signals blocked until
# then): 143, and the half is never killed by the signal passed on.
for i in 1 2 3 4 5 6; do
    way=up; [ $((i % 2)) = 0 ] && way=down
    launch_copy $way
    for _ in $(seq 2000); do [ -s "$T/remote.pid" ] && break; sleep 0.01; done
    kill -TERM "$pid"
    expect_end "$way, SIGTERM as it starts ($i)" 143 5
    ! grep -F 'killed by' "$T/$way.err" || fail "$way, SIGTERM as it starts ($i): a half was killed"
done

# The cuts, with a local half that cannot end by itself: it is stopped
# (SIGSTOP).  A second signal, then --drain-timeout.
way=up
start_copy $way
kill -STOP "$(pgrep -P "$pid")"
kill -TERM "$pid"
sleep 0.5
kill -INT "$pid"
expect_end "second signal" 143 3
assert_eq "ferry: stopped by SIGTERM, then SIGINT: exiting at once" "$(cat "$T/$way.err")" \
    "second signal: the one line"

way=down
start_copy $way --drain-timeout=1
kill -STOP "$(pgrep -P "$pid")"
kill -HUP "$pid"
expect_end "--drain-timeout" 129 4
assert_eq "ferry: stopped by SIGHUP: the copy did not end within --drain-timeout 1 s: exiting at once" \
    "$(cat "$T/$way.err")" "--drain-timeout: the one line"

# An ssh server that accepts and never speaks: SIGTERM during the
# handshake ends ferry at once (libssh would wait for its timeout), and
# the local half, still waiting for the go, ends without a word.
need nc
port=$(free_port)
bg nc -l 127.0.0.1 "$port"
wait_for_port "$port"
address="ssh://root@127.0.0.1:$port?keyfile=$SSH_KEY"
"$FERRY" --streams=1 --nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst)" "$address" 2> "$T/mute.err" &
pid=$!
sleep 1
# Until its go, and its stream mode's handlers, the local half blocks them.
stop_signals_in "$(pgrep -P "$pid")" SigBlk || fail "the local half waiting for its go does not block the stop signals"
! stop_signals_in "$pid" SigBlk || fail "ferry blocks the stop signals after the fork"
kill -TERM "$pid"
rc=0
wait_exit 3 "$pid" || rc=$?
assert_eq 143 "$rc" "SIGTERM during the ssh handshake: exit code"
assert_eq "ferry: stopped by SIGTERM while connecting to $address" "$(cat "$T/mute.err")" \
    "SIGTERM during the ssh handshake: the one line"
! pgrep -f -- "--remote-nbd-receive=$(uri dst) $address" > /dev/null ||
    fail "a half is left after SIGTERM during the handshake"
