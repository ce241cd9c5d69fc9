#!/usr/bin/env bash
# A stop signal that was ignored when ferry started stays ignored, as
# nohup and a non-interactive shell's background job (SIGINT, SIGQUIT)
# ask: SIGHUP under `env --ignore-signal=HUP` (what nohup does) does not
# stop ferry, and SIGTERM still does, in the relay mode and in a stream
# mode.  SIGUSR1, which never stops ferry, is caught all the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"

mask_has () {  # PID FIELD SIG: the /proc mask FIELD (SigCgt, SigIgn) holds SIG
    local mask
    mask=$(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status")
    (( (16#$mask >> ($(kill -l "$3") - 1)) & 1 ))
}

# Ignored SIG to PID: it is left ignored, and PID is still there after it.
survives () {  # PID SIG WHAT
    mask_has "$1" SigIgn "$2" || fail "$3: SIG$2 is not ignored"
    ! mask_has "$1" SigCgt "$2" || fail "$3: SIG$2 is caught"
    kill -"$2" "$1"
    sleep 0.3
    kill -0 "$1" 2> /dev/null || fail "$3: stopped by SIG$2"
}

# Relay mode, a listener waiting for its connection: nohup-style, then a
# plain background job (SIGINT and SIGQUIT ignored by the shell).
for start in "env --ignore-signal=HUP,USR1" ""; do
    rm -f "$T/s.sock"
    $start "$FERRY" -v -l "unix:$T/s.sock" < /dev/null > /dev/null 2> "$T/err" & track $!
    server=$!
    wait_for_socket "$T/s.sock"
    mask_has "$server" SigCgt USR1 || fail "listener ($start): SIGUSR1 is not caught"
    if [ -n "$start" ]; then
        survives "$server" HUP "listener ($start)"
    else
        survives "$server" INT "listener in the background"
        survives "$server" QUIT "listener in the background"
    fi
    kill -TERM "$server"
    rc=0; wait_exit 10 "$server" || rc=$?
    assert_eq 0 "$rc" "listener ($start): exit code after SIGTERM"
    assert_eq "ferry: stopped by SIGTERM while waiting for a connection" "$(cat "$T/err")" \
        "listener ($start): the line after SIGTERM"
done

# A stream mode: a sender whose reads are slow (the copy runs on).
serve src --filter=delay pattern size=$((256 * 1024 * 1024)) rdelay=300ms
env --ignore-signal=HUP "$FERRY" --nbd-send="$(uri src)" > "$T/s.stream" 2> "$T/err" & track $!
sender=$!
wait_until 10 catches_signals "$sender"
wait_until 10 test -s "$T/s.stream"
survives "$sender" HUP "sender"
kill -TERM "$sender"
wait_rc 10 "$sender"
assert_eq 143 "$rc" "sender: exit code after SIGTERM"
[[ $(tail -1 "$T/err") =~ ^"ferry: stopped by SIGTERM; the image was sent up to offset " ]] ||
    fail "sender: the line after SIGTERM: $(tail -1 "$T/err")"
