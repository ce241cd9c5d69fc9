#!/usr/bin/env bash
# 256 MiB each way at once over a TCP socket, sha256 checked.
. "$(dirname "$0")/lib.sh"
bulk_transfer tcp both ${BULK_BYTES:-$((256 * 1024 * 1024))}
