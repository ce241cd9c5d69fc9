#!/usr/bin/env bash
# 256 MiB up (stdin -> server) over a UNIX socket, sha256 checked.
. "$(dirname "$0")/lib.sh"
bulk_transfer unix up ${BULK_BYTES:-$((256 * 1024 * 1024))}
