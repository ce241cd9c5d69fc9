#!/usr/bin/env bash
# 256 MiB each way at once through exec mode: the server runs
# "<remote-helper> unix:PATH" (this build of ferry) on a session channel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat sha256sum

start_sshd main /usr/bin:/bin
ssh_bulk_both_ways $((256 * 1024 * 1024)) "UNIX-LISTEN:$T/s.sock" \
    --remote-helper="$FERRY" "$(ssh_base)$T/s.sock?proxy=exec&keyfile=$SSH_KEY"
