#!/usr/bin/env bash
# Local files on both ends, no NBD server: a sparse 64 MiB image (about
# 10% data) into a DEST that does not exist, one larger (truncated to the
# image) and one smaller (grown), and --raw and --allocated: identical,
# holes kept (unless --allocated; --raw's sender into a file keeps them
# too), digests equal to the independent one and to nbdkit's view of the
# same file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
SIZE=$((64 * 1024 * 1024))
sparse_image "$T/a.img" 64 26

roundtrip "$T/a.img" "$T/b.img"
assert_eq "$SIZE" "$(stat -c %s "$T/b.img")" "size of the new DEST"
cmp "$T/a.img" "$T/b.img" || fail "the copy differs"
src_kib=$(allocated_kib "$T/a.img") dst_kib=$(allocated_kib "$T/b.img")
[ "$dst_kib" -le $((src_kib + 1024)) ] ||
    fail "DEST has $dst_kib KiB allocated, SOURCE $src_kib KiB"
want=$(python3 "$CHECK" digest "$T/a.img" "$SIZE")
assert_eq "$want  $T/a.img" "$("$FERRY" --nbd-digest="$T/a.img")" "--nbd-digest of SOURCE"
assert_eq "$want" "$("$FERRY" --nbd-digest='[' nbdkit -r file "$T/a.img" ']' | cut -d' ' -f1)" \
    "--nbd-digest of SOURCE through nbdkit"

# Larger, with data past the image's end and where the image has holes.
rm -f "$T/b.img"
head -c $((96 * 1024 * 1024)) /dev/urandom > "$T/b.img"
roundtrip "$T/a.img" "$T/b.img"
assert_eq "$SIZE" "$(stat -c %s "$T/b.img")" "size of the larger DEST"
cmp "$T/a.img" "$T/b.img" || fail "the copy into the larger DEST differs"

# Smaller.
rm -f "$T/b.img"
head -c $((16 * 1024 * 1024)) /dev/urandom > "$T/b.img"
roundtrip "$T/a.img" "$T/b.img"
assert_eq "$SIZE" "$(stat -c %s "$T/b.img")" "size of the smaller DEST"
cmp "$T/a.img" "$T/b.img" || fail "the copy into the smaller DEST differs"

# --raw: the size is not in the stream; DEST ends with the bytes received.
head -c $((80 * 1024 * 1024)) /dev/urandom > "$T/b.img"
"$FERRY" --raw --nbd-send="$T/a.img" | "$FERRY" --raw --nbd-receive="$T/b.img"
assert_eq "$SIZE" "$(stat -c %s "$T/b.img")" "size of the --raw DEST"
cmp "$T/a.img" "$T/b.img" || fail "the --raw copy differs"
# --raw into a regular file: the holes kept (the zeros sought over), the
# size SRC's; through a pipe, every byte.
rm -f "$T/b.img"
"$FERRY" --raw --nbd-send="$T/a.img" > "$T/b.img" || fail "--raw into a file"
cmp "$T/a.img" "$T/b.img" || fail "--raw into a file differs"
assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/b.img")" "--raw into a file: the SEEK_DATA map"
# Zero blocks that the sender finds in what it read (written zeros, no
# hole in SRC) are holes too.
{ head -c $((1024 * 1024)) /dev/urandom; head -c $((2 * 1024 * 1024)) /dev/zero
  head -c $((1024 * 1024)) /dev/urandom; } > "$T/written-zeros.img"
"$FERRY" --raw --nbd-send="$T/written-zeros.img" > "$T/b.img" || fail "--raw, written zeros"
cmp "$T/written-zeros.img" "$T/b.img" || fail "--raw, written zeros: differs"
assert_eq "0 $((1024 * 1024))
$((3 * 1024 * 1024)) $((4 * 1024 * 1024))" "$(data_map "$T/b.img")" "--raw, written zeros: the map"
"$FERRY" --raw --nbd-send="$T/a.img" | cat > "$T/b.img" || fail "--raw through a pipe"
cmp "$T/a.img" "$T/b.img" || fail "--raw through a pipe differs"
head -c $((1024 * 1024)) /dev/urandom > "$T/tail-hole.img"
truncate -s 8M "$T/tail-hole.img"
"$FERRY" --raw --nbd-send="$T/tail-hole.img" > "$T/b.img" || fail "--raw into a file, a hole last"
cmp "$T/tail-hole.img" "$T/b.img" || fail "--raw into a file, a hole last: differs"
assert_eq "0 $((1024 * 1024))" "$(data_map "$T/b.img")" "--raw into a file, a hole last: the map"
head -c 100000 /dev/urandom > "$T/odd"
"$FERRY" --raw --nbd-receive="$T/c.img" < "$T/odd"
cmp "$T/odd" "$T/c.img" || fail "the --raw copy of 100000 bytes into a new DEST differs"

# --allocated: the zeros are written out, not holes.
rm -f "$T/b.img"
"$FERRY" --nbd-send="$T/a.img" | "$FERRY" --allocated --nbd-receive="$T/b.img"
cmp "$T/a.img" "$T/b.img" || fail "the --allocated copy differs"
[ "$(allocated_kib "$T/b.img")" -ge $((SIZE / 1024)) ] ||
    fail "--allocated left holes: $(allocated_kib "$T/b.img") KiB allocated"
