#!/usr/bin/env bash
# nbdcopy copies a 1 GiB nbdkit sparse-random export to an nbdkit memory
# export, reading through 'ferry --nbd' in nbdcopy's [ CMD ] form (socket
# activation).  qemu-img compare finds both sides equal, nbdinfo --map shows
# the same extents through ferry as directly, and ferry's stats account for
# every read.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy nbdinfo qemu-img

size=$((1024 * 1024 * 1024))
bg nbdkit -f -U "$T/src.sock" sparse-random size=$size seed=42
bg nbdkit -f -U "$T/dst.sock" memory size=$size
wait_for_socket "$T/src.sock"
wait_for_socket "$T/dst.sock"
src="nbd+unix:///?socket=$T/src.sock"
dst="nbd+unix:///?socket=$T/dst.sock"

within 120 nbdcopy --flush -- [ "$FERRY" --nbd --stats-file "$T/stats" "unix:$T/src.sock" ] "$dst" ||
    fail "nbdcopy through ferry --nbd failed"
within 120 qemu-img compare -f raw -F raw "$src" "$dst" || fail "the copy differs"

nbdinfo --map "$src" > "$T/map-direct"
within 60 nbdinfo --map -- [ "$FERRY" --nbd "unix:$T/src.sock" ] > "$T/map-ferry" 2>/dev/null
assert_same_file "$T/map-direct" "$T/map-ferry" "nbdinfo --map through ferry"

cat "$T/stats" >&2
assert_contains "$T/stats" "nbd: stats final" "final stats block"
assert_contains "$T/stats" "size=$size" "export size in the handshake summary"
assert_contains "$T/stats" "structured_replies=yes" "structured replies"
assert_contains "$T/stats" "meta_contexts=base:allocation" "meta context"
# Every data byte read is counted once, as data or as a hole.
read_bytes=$(sed -n 's/.*cmd=read ops=[0-9]* bytes=\([0-9]*\).*/\1/p' "$T/stats")
[ -n "$read_bytes" ] && [ "$read_bytes" -gt 0 ] || fail "no read stats: $(cat "$T/stats")"
grep -q "cmd=block_status ops=[1-9]" "$T/stats" || fail "no block status stats"
