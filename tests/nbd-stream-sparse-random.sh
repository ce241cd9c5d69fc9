#!/usr/bin/env bash
# A 1 GiB nbdkit sparse-random export (10% data) through a pipe into an
# nbdkit memory export: identical, sparse, verified, few bytes on the wire.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src sparse-random size=1G seed=7 percent=10
serve dst memory size=1G
roundtrip "$(uri src)" "$(uri dst)"
