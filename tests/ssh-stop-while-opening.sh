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
# sshd gives up its connect once the session has gone.
stop_while_connecting "$address" "while the channel opens" sshd_connecting \
    HOME="$SSH_HOME" SSH_AUTH_SOCK=
