#!/usr/bin/env bash
# 256 MiB each way at once to a TCP port seen from the server, through a
# direct-tcpip channel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat sha256sum

start_sshd main /usr/bin:/bin
port=$(free_port)
ssh_bulk_both_ways $((256 * 1024 * 1024)) "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr" \
    "$(ssh_base)?tcp=127.0.0.1:$port&proxy=direct&keyfile=$SSH_KEY"
