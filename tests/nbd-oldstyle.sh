#!/usr/bin/env bash
# nbdkit -o speaks the oldstyle handshake (no options, 32-bit flags and 124
# zeroes): ferry --nbd follows it, and --nbd-readonly sets the read-only
# flag in it.  nbdcopy's copy matches a direct one.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy nbdinfo sha256sum

bg nbdkit -f -o -U "$T/src.sock" pattern size=32M
wait_for_socket "$T/src.sock"
nbdcopy_through_ferry "$T/src.sock" --nbd --stats-file "$T/stats"
cat "$T/stats" >&2
assert_contains "$T/stats" "style=oldstyle" "handshake style"
assert_contains "$T/stats" "size=33554432" "export size"

within 30 nbdinfo -- [ "$FERRY" --nbd-readonly "unix:$T/src.sock" ] > "$T/info" 2>/dev/null
assert_contains "$T/info" "is_read_only: true" "oldstyle flags under the guard"
