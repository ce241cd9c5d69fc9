#!/usr/bin/env bash
# nbdkit --no-sr offers only simple replies: ferry --nbd must tell READ
# replies (which carry data) from the rest by their cookies.  nbdcopy
# copies 64 MiB through it, and the bytes match a direct copy.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy sha256sum

bg nbdkit -f -U "$T/src.sock" --no-sr pattern size=64M
wait_for_socket "$T/src.sock"
nbdcopy_through_ferry "$T/src.sock" --nbd --stats-file "$T/stats"
cat "$T/stats" >&2
assert_contains "$T/stats" "structured_replies=no" "simple replies only"
assert_contains "$T/stats" "bytes=67108864" "every byte read counted"
