#!/usr/bin/env bash
# End of stream through an ssh channel.
#  - stdin EOF becomes the channel's EOF (ssh_channel_send_eof): the server
#    reads to its end, then answers, and the answer still arrives
#    (direct-streamlocal and exec).
#  - The server closes first while stdin stays open: every byte it sent
#    arrives.  Through a direct channel sshd passes the close on as the
#    channel's EOF only, which looks like a half-close (as over TCP), so
#    ferry ends with --half-close-timeout=1; through exec the remote ferry
#    sees the UNIX socket's HUP and exits, the channel closes, and ferry
#    exits 0 without any timeout.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat sha256sum

start_sshd main /usr/bin:/bin
make_data up $((8 * 1024 * 1024))
make_data down $((8 * 1024 * 1024))
bg socat -t 30 "UNIX-LISTEN:$T/hash.sock,fork" SYSTEM:'sha256sum | head -c 64'
wait_for_socket "$T/hash.sock"
for proxy in direct exec; do
    out=$(ferry_ssh --remote-helper="$FERRY" \
          "$(ssh_base)$T/hash.sock?proxy=$proxy&keyfile=$SSH_KEY" < "$T/up") ||
        fail "proxy=$proxy: ferry exited $?"
    assert_eq "$(sha "$T/up")" "$out" "proxy=$proxy: answer after the half-close"
done

# stdin stays open: a fifo whose writer (sleep) outlives the test's checks.
mkfifo "$T/in"
bg sh -c 'exec sleep 60 > "$1"' sh "$T/in"
for proxy in direct exec; do
    opts=()
    [ "$proxy" = direct ] && opts=(--half-close-timeout=1)
    bg socat "UNIX-LISTEN:$T/first.sock,unlink-early" SYSTEM:"cat '$T/down'"
    wait_for_socket "$T/first.sock"
    start=$(date +%s)
    rc=0
    ferry_ssh "${opts[@]}" --remote-helper="$FERRY" \
        "$(ssh_base)$T/first.sock?proxy=$proxy&keyfile=$SSH_KEY" < "$T/in" > "$T/got" || rc=$?
    assert_eq 0 "$rc" "proxy=$proxy, server closes first: ferry exit code"
    assert_same_file "$T/down" "$T/got" "proxy=$proxy, server closes first"
    [ $(( $(date +%s) - start )) -lt 15 ] ||
        fail "proxy=$proxy, server closes first: ferry did not exit promptly"
done
