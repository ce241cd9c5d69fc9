#!/usr/bin/env bash
# --streams=4 when things go wrong: one remote ferry SIGKILLed mid-copy,
# each way (the local ferry exits within seconds with 24 and a line naming
# the host and the stream, and leaves no local half behind; a --delta
# re-run then completes the upload); a missing
# remote export (30, one line, not one per stream); usage errors (2; among them --delta with
# --destination-is-zero); a server's MaxSessions below --streams (3, one
# line, before any remote half runs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
host=root@127.0.0.1:$SSHD_PORT

# Usage errors: exit 2, one line, nothing run.
usage () {  # TEXT ARGS...
    local text=$1 rc=0; shift
    "$FERRY" "$@" 2> "$T/usage.err" || rc=$?
    assert_eq 2 "$rc" "usage: $*"
    assert_eq "ferry: $text" "$(cat "$T/usage.err")" "usage: $*: message"
}
usage "--streams goes with --remote-nbd-send or --remote-nbd-receive; see 'ferry --help'" --nbd-send=x --streams=2
for args in "--nbd-send=x" "--nbd-send=x --remote-nbd-receive=y --streams=1 ssh://h" \
            "--nbd-send=x --remote-nbd-receive=y --no-verify ssh://h"; do
    # shellcheck disable=SC2086
    usage "--session-per-stream goes with a copy over ssh (--remote-nbd-send or --remote-nbd-receive) and --streams of 2 or more; see 'ferry --help'" \
        --session-per-stream $args
done
rc=0
"$FERRY" copy --streams=4 --session-per-stream "$T/none.img" "$T/none-either.img" 2> "$T/usage.err" ||
    rc=$?
assert_eq 2 "$rc" "usage: a local copy with --session-per-stream"
assert_eq "ferry: --session-per-stream goes with a copy over ssh (--remote-nbd-send or --remote-nbd-receive) and --streams of 2 or more" \
    "$(cat "$T/usage.err")" "usage: a local copy with --session-per-stream: message"
usage "invalid --streams '0': expected 1 to 16; see 'ferry --help'" --nbd-send=x --remote-nbd-receive=y --streams=0 ssh://h
usage "invalid --streams '17': expected 1 to 16; see 'ferry --help'" --nbd-send=x --remote-nbd-receive=y --streams=17 ssh://h
usage "--no-verify goes with --streams=1: the ranges of more streams are checked by their digests; see 'ferry --help'" \
    --nbd-send=x --remote-nbd-receive=y --streams=4 --no-verify ssh://h
usage "--ranged goes with --nbd-send or --nbd-receive (it is the remote half of --streams); see 'ferry --help'" \
    --nbd-digest=x --ranged
for args in "--nbd-send=x --remote-nbd-receive=y --streams=1 ssh://h" "--nbd-send=x" \
            "--nbd-receive=x --remote-nbd-send=y --no-verify ssh://h"; do
    # shellcheck disable=SC2086
    usage "--delta goes with ferry copy, --remote-nbd-send or --remote-nbd-receive, --streams of 2 or more and no --no-verify (the ranged stream carries the destination's digests); see 'ferry --help'" \
        --delta $args
done
# ZERO records would not be written over the destination's data (review h16q).
for args in "--nbd-send=x --remote-nbd-receive=y ssh://h" "--nbd-receive=x --ranged"; do
    # shellcheck disable=SC2086
    usage "--delta and --destination-is-zero exclude each other (a delta's destination holds data, which ZERO records must overwrite); see 'ferry --help'" \
        --delta --destination-is-zero $args
done

# Three ranges in flight at once, each read slowly (100 ms a request of
# 256 KiB): the copy is still going a second in.
serve_src () { serve src --filter=delay sparse-random size=384M seed=9 percent=50 rdelay=100ms; src_pid=$LAST_PID; }
serve_src
serve dst memory size=384M
mkdir "$T/pids"
cat > "$T/helper" <<HELPER
#!/bin/sh
echo \$\$ > "$T/pids/\$\$"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"
REMOTE_HELPER=$T/helper

remote_copy up "$(uri src)" "$(uri nowhere)" --streams=4
assert_eq 30 "$REMOTE_RC" "remote DST missing: exit code"
assert_contains "$T/remote.err" "ferry: $host (stream 1): cannot connect to $(uri nowhere): " \
    "remote DST missing: message"
assert_eq 1 "$(wc -l < "$T/remote.err")" "remote DST missing: one line"
rm -f "$T"/pids/*

# A remote ferry that is still copying (the stream that got no range has
# ended).
started () { [ "$(ls "$T/pids" | wc -l)" -ge 4 ]; }
killer () {
    wait_until 20 started
    sleep 1
    for p in $(ls "$T/pids"); do
        ! kill -9 "$p" 2> /dev/null || break
    done
}
# Both ways in the plain build; the upload alone in the deferred-unref and
# sanitizer ones (.ci/run's time).
ways="up down"
[ -n "${FERRY_TEST_PLAIN:-}" ] || ways=up
for way in $ways; do
    killer &
    start=$SECONDS
    remote_copy "$way" "$(uri src)" "$(uri dst)" --streams=4 --request-size=256K --in-flight=256K
    wait $!
    assert_eq 24 "$REMOTE_RC" "$way: exit code"
    assert_contains "$T/remote.err" "ferry: $host (stream " "$way: the stream named"
    assert_contains "$T/remote.err" "): the remote half was killed by SIGKILL (ran: " \
        "$way: message"
    ! grep -F 'Broken pipe' "$T/remote.err" || fail "$way: a line about the lost stream"
    [ $((SECONDS - start)) -le 10 ] || fail "$way: took $((SECONDS - start)) s"
    ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null ||
        fail "$way: a local half is left: $(pgrep -af -- "--remote-helper=$T/helper")"
    gone () { for p in $(ls "$T/pids"); do ! kill -0 "$p" 2> /dev/null || return 1; done; }
    wait_until 10 gone
    rm -f "$T"/pids/*
    # A --delta re-run completes the interrupted upload.
    if [ $way = up ]; then
        serve_again_if_dead src "$src_pid" serve_src
        remote_copy up "$(uri src)" "$(uri dst)" --streams=4 --delta
        assert_eq 0 "$REMOTE_RC" "the --delta re-run's exit code"
        within 120 qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 ||
            fail "the copy differs after the --delta re-run"
        rm -f "$T"/pids/*
    fi
done

# SIGTERM mid-copy: it reaches every half, each stops, and the copy exits
# 143 within the drain timeout, leaving nothing behind.
for way in $ways; do
    if [ $way = up ]; then
        args=(--nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst)")
    else
        args=(--nbd-receive="$(uri dst)" --remote-nbd-send="$(uri src)")
    fi
    env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" "${args[@]}" \
        --streams=4 --request-size=256K --in-flight=256K "$(ssh_base)?keyfile=$SSH_KEY" \
        2> "$T/$way-term.err" &
    pid=$!
    wait_until 20 started
    sleep 1
    kill -TERM "$pid" || fail "$way: the copy ended before SIGTERM: $(cat "$T/$way-term.err")"
    wait_rc 10 "$pid"
    cat "$T/$way-term.err" >&2
    assert_eq 143 "$rc" "$way, SIGTERM: exit code"
    assert_contains "$T/$way-term.err" "ferry: stopped by SIGTERM" "$way, SIGTERM: a half's line"
    ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null || fail "$way, SIGTERM: a local half is left"
    wait_until 10 gone
    rm -f "$T"/pids/*
done

# A server that allows fewer sessions than --streams: all the channels open
# first, in one round trip, so the refusal comes before any remote half
# runs or any byte moves: exit 3, one line.
start_sshd few /usr/bin:/bin "MaxSessions 2"
host=root@127.0.0.1:$SSHD_PORT
remote_copy up "$(uri src)" "$(uri dst)" --streams=4
assert_eq 3 "$REMOTE_RC" "MaxSessions 2: exit code"
assert_contains "$T/remote.err" "ferry: $host: cannot open a session channel: " \
    "MaxSessions 2: message"
assert_eq 1 "$(wc -l < "$T/remote.err")" "MaxSessions 2: one line"
assert_eq "" "$(ls "$T/pids")" "MaxSessions 2: remote halves run"
