#!/usr/bin/env bash
# Half-close, fast reply: 1 MiB up, then stdin EOF; the server reads to EOF
# and only then replies with 1 MiB.  The whole reply must arrive.
. "$(dirname "$0")/lib.sh"
half_close_exchange $((1024 * 1024)) $((1024 * 1024)) 0
