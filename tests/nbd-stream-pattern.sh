#!/usr/bin/env bash
# A dense nbdkit pattern export (every byte data) through a pipe.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src pattern size=256M
serve dst memory size=256M
roundtrip "$(uri src)" "$(uri dst)"
