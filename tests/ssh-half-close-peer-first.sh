#!/usr/bin/env bash
# Over ssh://, a server that replies, half-closes first and then reads on:
# the channel's EOF ends the download only, and the upload (32 MiB) still
# arrives whole, through a direct-streamlocal channel to a UNIX socket and
# through a direct-tcpip channel to a TCP port.  ferry exits 0 once the
# server, having read to EOF, closes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

start_sshd main /usr/bin:/bin
make_data up $((32 * 1024 * 1024))
printf x > "$T/reply"
port=$(free_port)
for kind in streamlocal tcpip; do
    case $kind in
    streamlocal) listen=unix:$T/hc.sock url="$(ssh_base)$T/hc.sock?proxy=direct&keyfile=$SSH_KEY" ;;
    tcpip) listen=tcp:127.0.0.1:$port url="$(ssh_base)?tcp=127.0.0.1:$port&proxy=direct&keyfile=$SSH_KEY" ;;
    esac
    rm -f "$T/server-got"
    eos_peer listen "$listen" half-close-first "$T/reply" "$T/server-got"
    server=$LAST_PID
    case $kind in
    streamlocal) wait_for_socket "$T/hc.sock" "$server" ;;
    tcpip) wait_for_port "$port" ;;
    esac
    ferry_ssh "$url" < "$T/up" > "$T/got" 2> "$T/err" ||
        fail "$kind: ferry exited $?: $(cat "$T/err")"
    wait_exit 10 "$server" || fail "$kind: server exited $?"
    assert_eq "$(size_sum "$T/up")" "$(cat "$T/server-got")" "$kind: upload after the server's half-close"
    assert_eq x "$(cat "$T/got")" "$kind: reply"
done
