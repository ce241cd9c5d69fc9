#!/usr/bin/env bash
# A local file on one end and an NBD server on the other: a sparse file
# into nbdkit memory, and nbdkit sparse-random (and a server command)
# into a new local file, with every check of the round trips.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
sparse_image "$T/a.img" 64 26
serve dst memory size=64M
roundtrip "$T/a.img" "$(uri dst)"

serve src sparse-random size=256M seed=11 percent=10
roundtrip "$(uri src)" "$T/b.img"
assert_eq $((256 * 1024 * 1024)) "$(stat -c %s "$T/b.img")" "size of the new DEST"

# A server command as SOURCE, a file as DEST.
rm -f "$T/c.img"
"$FERRY" --nbd-send='[' nbdkit -r file "$T/a.img" ']' | "$FERRY" --nbd-receive="$T/c.img"
cmp "$T/a.img" "$T/c.img" || fail "the copy from a server command differs"
