#!/usr/bin/env bash
# ferry digest HOST:IMAGE stopped while the far ferry reads (a slow NBD
# export behind nbdkit's delay filter, which the remote helper reads in
# place of IMAGE): one line, exit 143, no digest line, and the far ferry
# (whose stdout's reader has gone with the session) reads no further: sshd
# sends it no signal (the test's login is root's).  And --nbd-digest into
# a pipe whose reader exits: it stops at once, in one line, exit 4.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need nbdkit
nbdkit --filter=delay --dump-plugin pattern > /dev/null 2>&1 || skip "nbdkit has no delay filter"
start_sshd main /usr/bin:/bin
ssh_host_alias testhost
bg nbdkit -f -U "$T/slow.sock" --filter=delay pattern size=4G delay-read=100ms
wait_for_socket "$T/slow.sock"
image="testhost:$T/far.img"
# The remote helper: ferry, on the slow export.
cat > "$T/ferry-slow" <<HELPER
#!/bin/sh
shift
exec "$FERRY" --nbd-digest="nbd+unix:///?socket=$T/slow.sock" "\$@"
HELPER
chmod +x "$T/ferry-slow"
# The far ferry's command line names the socket: no other test's.
far_running () { pgrep -f -- "--nbd-digest=nbd\+unix:///\?socket=$T/slow.sock" > /dev/null; }
cleanup_fn pkill -f -- "--nbd-digest=nbd\+unix:///\?socket=$T/slow.sock"

# SIGTERM once the far ferry reads.
env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" digest --remote-helper="$T/ferry-slow" \
    "$image" > "$T/out" 2> "$T/err" & track $!
pid=$!
wait_until 30 far_running
sleep 0.3
kill -TERM $pid
rc=0
wait_exit 20 $pid || rc=$?
assert_eq 143 "$rc" "a stopped remote digest: exit code"
assert_eq "" "$(cat "$T/out")" "a stopped remote digest: no digest line"
assert_eq "ferry: stopped by SIGTERM: the digest of $image was not finished" "$(cat "$T/err")" \
    "a stopped remote digest: the line"
wait_until 5 eval "! far_running"

# Locally: a reader that goes early stops the digest (4 GiB at 100 ms a
# read would take seconds).
within 20 "$FERRY" --nbd-digest="nbd+unix:///?socket=$T/slow.sock" 2> "$T/err" | { sleep 0.5; exit 0; }
rc=${PIPESTATUS[0]}
assert_eq 4 "$rc" "a digest whose reader has gone: exit code"
assert_contains "$T/err" "ferry: cannot write the digest to stdout: its reader has gone (the image was read up to offset" \
    "a digest whose reader has gone: the line"
assert_eq 1 "$(wc -l < "$T/err")" "a digest whose reader has gone: one line"

