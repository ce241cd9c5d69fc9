#!/usr/bin/env bash
# An export of 1 GiB + 1234 bytes: its last block is short, in the
# records and in the digest.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((1024 * 1024 * 1024 + 1234))
serve src sparse-random size=$size seed=3 percent=5
serve dst memory size=$size
roundtrip "$(uri src)" "$(uri dst)"
# The last 1234 bytes, data in the source, arrive.
nbdkit -U - data data="@$((size - 1)) 0x7f" size=$size --run \
    "'$FERRY' --nbd-send=\"\$uri\"" | "$FERRY" --nbd-receive="$(uri dst)" ||
    fail "stream of a last-byte image"
assert_eq "7f" "$(nbdcopy "$(uri dst)" - | tail -c 1 | od -An -tx1 | tr -d ' ')" "last byte"
