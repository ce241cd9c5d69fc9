#!/usr/bin/env bash
# nbdcopy through 'ferry --nbd' (1 GiB sparse-random to memory, and
# nbdinfo --map) with ferry under fault injection: the copy must compare
# equal and the stats account for every read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fault.sh"
run_with_faults nbd-copy-sparse-random
