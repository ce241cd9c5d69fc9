#!/usr/bin/env bash
# 256 MiB each way at once to a remote UNIX socket through a
# direct-streamlocal channel (nothing runs on the server but sshd).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat sha256sum

start_sshd main /usr/bin:/bin
ssh_bulk_both_ways $((256 * 1024 * 1024)) "UNIX-LISTEN:$T/s.sock" \
    "$(ssh_base)$T/s.sock?proxy=direct&keyfile=$SSH_KEY"
