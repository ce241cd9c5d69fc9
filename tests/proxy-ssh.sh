#!/usr/bin/env bash
# ssh:// through --proxy: libssh gets the tunnel's socket (SSH_OPTIONS_FD),
# to the host and port that ~/.ssh/config makes of the address.  1 MiB
# each way through a direct-tcpip channel over a session that microsocks
# carries (its log shows the connection to sshd), also with a Host alias;
# a proxy that cannot reach sshd: its answer, exit 3.  And OpenSSH's own
# SOCKS server (ssh -D), the real SOCKS4a one here: 4 MiB echoed through
# it as SOCKS4a and SOCKS5, the name resolved by sshd.  A remote ferry
# copy's session goes through it too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need socat microsocks
. "$(dirname "$0")/lib-proxy.sh"

start_sshd main /usr/bin:/bin
ms=$(free_port)
# Appending: the log is emptied between sessions.
bg microsocks -i 127.0.0.1 -p "$ms" > /dev/null 2>> "$T/microsocks.log"
wait_for_port "$ms"

port=$(free_port)
ssh_bulk_both_ways $((4 * 1024 * 1024)) "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" \
    --proxy="socks5://127.0.0.1:$ms" "$(ssh_base)?tcp=127.0.0.1:$port&proxy=direct&keyfile=$SSH_KEY"
assert_contains "$T/microsocks.log" "connected to 127.0.0.1:$SSHD_PORT" "microsocks carried the session"

ssh_host_alias tunnelled
: > "$T/microsocks.log"
ssh_bulk_both_ways $((4 * 1024 * 1024)) "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" \
    --proxy="socks5://127.0.0.1:$ms" "ssh://tunnelled?tcp=127.0.0.1:$port&proxy=direct"
assert_contains "$T/microsocks.log" "connected to 127.0.0.1:$SSHD_PORT" \
    "microsocks carried the alias's session"

# ferry copy to the alias: its 2 streams' session through microsocks.
sparse_image "$T/a.img" 64 64
mkdir "$T/far"
: > "$T/microsocks.log"
within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --proxy="socks5://127.0.0.1:$ms" \
    --remote-helper="$FERRY" --streams=2 "$T/a.img" "tunnelled:$T/far/up.img" ||
    fail "ferry copy through the proxy"
cmp "$T/a.img" "$T/far/up.img" || fail "ferry copy through the proxy: the copy differs"
assert_contains "$T/microsocks.log" "connected to 127.0.0.1:$SSHD_PORT" \
    "microsocks carried ferry copy's session"

closed=$(free_port)
rc=0
: | ferry_ssh --proxy="socks5://127.0.0.1:$ms" \
    "ssh://root@127.0.0.1:$closed?tcp=127.0.0.1:$port&keyfile=$SSH_KEY" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "sshd unreachable through the proxy: exit code"
assert_eq "ferry: proxy 127.0.0.1:$ms refused SOCKS5 CONNECT 127.0.0.1:$closed: connection refused (5)" \
    "$(cat "$T/err")" "sshd unreachable through the proxy: message"

dynamic=$(free_port)
bg "$SSH_CMD" -N -D "127.0.0.1:$dynamic" -p "$SSHD_PORT" 127.0.0.1
wait_for_port "$dynamic"
through "ssh -D, SOCKS4a" --proxy="socks4a://127.0.0.1:$dynamic" "localhost:$echo_port"
through "ssh -D, SOCKS5" --proxy="socks5://127.0.0.1:$dynamic" "localhost:$echo_port"
