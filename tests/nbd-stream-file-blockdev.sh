#!/usr/bin/env bash
# Loop devices as SOURCE and DEST: a sparse image into a device full of
# random bytes (its holes zeroed with BLKZEROOUT), the device back into a
# file, its --nbd-digest equal to the file's, and a device smaller than
# the image refused with exit 23 as an NBD export is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need losetup
[ -e /dev/loop-control ] || skip "no /dev/loop-control"
SIZE=$((64 * 1024 * 1024))

loop_device () {  # VAR BACKING_FILE: VAR becomes a new loop device over it
    local device
    device=$(losetup -f --show "$2" 2>/dev/null) || skip "losetup cannot attach a loop device"
    cleanup_fn losetup -d "$device"
    printf -v "$1" %s "$device"
}

sparse_image "$T/a.img" 64 26
head -c "$SIZE" /dev/urandom > "$T/dev.img"
loop_device dev "$T/dev.img"
"$FERRY" -v --nbd-send="$T/a.img" 2> "$T/send.err" |
    "$FERRY" -v --nbd-receive="$dev" 2> "$T/recv.err"
cat "$T/send.err" "$T/recv.err" >&2
cmp -n "$SIZE" "$T/a.img" "$dev" || fail "the copy into $dev differs"
want=$(python3 "$CHECK" digest "$T/a.img" "$SIZE")
assert_eq "$want" "$(summary_field "$T/recv.err" digest)" "receiver's digest"
assert_eq "$want  $dev" "$("$FERRY" --nbd-digest="$dev")" "--nbd-digest of $dev"

# The device as SOURCE: no map, every block read and scanned for zeros,
# so as many data bytes cross as from the file with its map.
cp "$T/send.err" "$T/send-file.err"
"$FERRY" -v --nbd-send="$dev" 2> "$T/send.err" | "$FERRY" --nbd-receive="$T/b.img"
cat "$T/send.err" >&2
cmp "$T/a.img" "$T/b.img" || fail "the copy from $dev differs"
assert_eq "$(summary_field "$T/send-file.err" data)" "$(summary_field "$T/send.err" data)" \
    "data bytes sent from $dev"
python3 "$CHECK" holes <(nbdinfo --map --json -- '[' nbdkit -r file "$T/a.img" ']') \
    <(nbdinfo --map --json -- '[' nbdkit -r file "$T/b.img" ']') >&2 ||
    fail "the copy from $dev has data where the image has holes"

# A device smaller than the image.
truncate -s 16M "$T/small.img"
loop_device small "$T/small.img"
set +e
"$FERRY" --nbd-send="$T/a.img" | "$FERRY" --nbd-receive="$small" 2> "$T/err"
rc=${PIPESTATUS[1]}
set -e
assert_ferry_error 23 "$rc" "$T/err" \
    "$small is 16777216 bytes, smaller than the stream's image of $SIZE bytes"
