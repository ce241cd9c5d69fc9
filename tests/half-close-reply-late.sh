#!/usr/bin/env bash
# Half-close, slow reply: 64 KiB up, then stdin EOF; the server replies
# 1.5 s after that EOF (socat itself would have given up after 0.5 s).  The
# whole reply must arrive.
. "$(dirname "$0")/lib.sh"
half_close_exchange $((64 * 1024)) $((256 * 1024)) 1.5
