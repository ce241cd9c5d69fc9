#!/usr/bin/env bash
# Servers that advertise multi-conn get up to 4 connections on both
# sides (--connections=N picks fewer); nbdkit's log shows them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
# 25% data: enough writes (about 120) that each of the 4 connections gets
# some even when a loaded machine completes each write before the next.
bg nbdkit -f -U "$T/src.sock" --filter=log sparse-random size=1G seed=5 percent=25 \
    logfile="$T/src.log"
bg nbdkit -f -U "$T/dst.sock" --filter=log memory size=1G logfile="$T/dst.log"
wait_for_socket "$T/src.sock"
wait_for_socket "$T/dst.sock"
roundtrip "$(uri src)" "$(uri dst)"
# roundtrip's digest readers connect too: count the copy's connections
# by those that read, and those that wrote.
readers=$(grep -E '^.*connection=[0-9]+ Read ' "$T/src.log" | sed 's/.*connection=\([0-9]*\).*/\1/' | sort -u | wc -l)
writers=$(grep -E 'connection=[0-9]+ Write ' "$T/dst.log" | sed 's/.*connection=\([0-9]*\).*/\1/' | sort -u | wc -l)
[ "$readers" -ge 4 ] || fail "reads on $readers connections, expected 4 (and more for the checks)"
assert_eq 4 "$writers" "connections that wrote"
flushes=$(grep -cE 'connection=[0-9]+ Flush ' "$T/dst.log")
assert_eq 4 "$flushes" "every connection flushed"

serve dst2 memory size=1G
"$FERRY" --connections=2 --nbd-send="$(uri src)" | "$FERRY" --connections=1 --nbd-receive="$(uri dst2)" ||
    fail "--connections copy"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst2)" >&2 || fail "--connections copy differs"
