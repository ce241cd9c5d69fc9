#!/usr/bin/env bash
# Blocks that are all NUL except their last byte (or first) are data (this
# corrupted disks in bdsync #39): with the map, without it (--no-extents:
# the zero scan alone decides), and through the raw receiver's scan.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((8 * 1024 * 1024))
serve src data data="@65535 1 @$((3 * 65536)) 2 @$((6 * 65536 - 1)) 3" size=$size
serve dst memory size=$size
roundtrip "$(uri src)" "$(uri dst)"
assert_eq $((3 * 65536)) "$(summary_field "$T/send.err" data)" "data bytes (3 blocks)"

serve dst2 memory size=$size
"$FERRY" -v --no-extents --nbd-send="$(uri src)" 2> "$T/send2.err" |
    "$FERRY" --nbd-receive="$(uri dst2)" || fail "--no-extents copy"
assert_eq $((3 * 65536)) "$(summary_field "$T/send2.err" data)" "data bytes with --no-extents"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst2)" >&2 || fail "--no-extents copy differs"

serve dst3 memory size=$size
nbdcopy "$(uri src)" - | "$FERRY" -v --raw --nbd-receive="$(uri dst3)" 2> "$T/recv3.err" ||
    fail "raw receive: $(cat "$T/recv3.err")"
assert_eq $((3 * 65536)) "$(summary_field "$T/recv3.err" data)" "raw receiver's data bytes"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst3)" >&2 || fail "raw copy differs"
