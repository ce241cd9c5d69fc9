#!/usr/bin/env bash
# The bulk UNIX and TCP transfers (up, down, both ways at once) with ferry
# under fault injection: EINTR, EAGAIN and short counts on every read,
# write, readv, writev, splice, recv and send, ENOMEM on the first try of a
# pipe.  Every sha256 must still match.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fault.sh"
export BULK_BYTES=${BULK_BYTES:-$((64 * 1024 * 1024))}
run_with_faults bulk-unix-up bulk-unix-down bulk-unix-both-ways \
    bulk-tcp-up bulk-tcp-down bulk-tcp-both-ways
