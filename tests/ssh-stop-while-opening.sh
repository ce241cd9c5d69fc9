#!/usr/bin/env bash
# A relay over ssh:// stopped while its channel opens: sshd's
# direct-tcpip connect to a server that never accepts (backlog 0, already
# holding one queued connection) holds the channel's open.  SIGTERM,
# SIGINT and SIGHUP each end ferry within seconds with 128 + the signal
# and one line (it exited 3, "cannot connect ...: stopped by a signal").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need python3 socat ss
start_sshd main /usr/bin:/bin

port=$(free_port)
hung_tcp_server "$port"

address="$(ssh_base)?tcp=127.0.0.1:$port&proxy=direct&keyfile=$SSH_KEY"
# sshd's connect to the server: the channel's open is on its way.
sshd_connecting () { [ -n "$(ss -Htn state syn-sent "dport = :$port")" ]; }
for sig in TERM INT HUP; do
    # SIGINT is ignored in a background job unless given back ($DFL).
    $DFL HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$address" < /dev/null 2> "$T/err" &
    pid=$!
    wait_until 20 sshd_connecting
    kill -"$sig" "$pid"
    rc=0
    wait_exit 5 "$pid" || rc=$?
    assert_eq $((128 + $(kill -l "$sig"))) "$rc" "SIG$sig while the channel opens: exit code"
    assert_eq "ferry: stopped by SIG$sig while connecting to $address" "$(cat "$T/err")" \
        "SIG$sig while the channel opens: the one line"
    # sshd gives up its connect once the session has gone.
    wait_until 10 eval '! sshd_connecting'
done
