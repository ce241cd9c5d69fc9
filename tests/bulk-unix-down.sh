#!/usr/bin/env bash
# 256 MiB down (server -> stdout) over a UNIX socket, sha256 checked.
. "$(dirname "$0")/lib.sh"
bulk_transfer unix down ${BULK_BYTES:-$((256 * 1024 * 1024))}
