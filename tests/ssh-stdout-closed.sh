#!/usr/bin/env bash
# ferry's stdout reader exits (head -c) while the server behind an ssh
# channel streams on and never ends (socat -u ignores the channel's EOF):
# ferry's writes to stdout fail, and the remote end, still sending, will
# not close the channel to confirm what it was sent.  ferry must exit 4
# within seconds, as over a socket (fault-reader-exits), naming stdout and
# the reason, and say that what it sent was not confirmed; it kept reading
# (and dropping) the endless stream instead.  Direct and exec channels.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat
start_sshd main /usr/bin:/bin
# An endless stream, slow enough not to load the machine while ferry waits.
bg socat -u SYSTEM:'while head -c 65536 /dev/zero 2> /dev/null; do sleep 0.02; done' \
    "UNIX-LISTEN:$T/s.sock,fork"
wait_for_socket "$T/s.sock"

for proxy in direct exec; do
    start=$SECONDS
    echo hello | within 20 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" \
        --remote-helper="$FERRY" "$(ssh_base)$T/s.sock?proxy=$proxy&keyfile=$SSH_KEY" \
        2> "$T/err" | head -c 1000 > "$T/got"
    rc=${PIPESTATUS[1]}
    cat "$T/err" >&2
    assert_ferry_error 4 "$rc" "$T/err" "ferry: cannot write to stdout: Broken pipe ("
    assert_contains "$T/err" "did not confirm the delivery of the 6 bytes sent to it" \
        "proxy=$proxy: the line about what was sent"
    assert_eq 1000 "$(stat -c %s "$T/got")" "proxy=$proxy: bytes the reader took"
    [ $((SECONDS - start)) -le 10 ] || fail "proxy=$proxy: ferry took $((SECONDS - start)) s"
done
