#!/usr/bin/env bash
# The block digests of a range (src/stream/module/nbd-block-digests.c, which --delta
# compares), through tests/block-digests.c, against python3 hashlib over
# nbdcopy's copy of the export: nbdkit sparse-random (holes skipped by the
# map), pattern (all data, a range ending at an odd export size), allocated
# zero blocks found by reading, then ranges refused and a read that fails.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
M=$((1024 * 1024))

# The digests of [OFFSET, +LENGTH) of NAME's export, by ferry and by
# python3 over $T/NAME.raw, must be the same; ferry's -v line in $T/err.
check_range () {  # NAME OFFSET LENGTH
    within 60 "$FERRY_BLOCK_DIGESTS" -v "$(uri "$1")" "$2:$3" \
        > "$T/ferry.txt" 2> "$T/err" || fail "block-digests: $(cat "$T/err")"
    python3 "$CHECK" blocks "$T/$1.raw" "$2" "$3" > "$T/python.txt"
    assert_eq $((($3 + 65535) / 65536)) "$(wc -l < "$T/ferry.txt")" "blocks of $1 [$2, +$3)"
    cmp "$T/python.txt" "$T/ferry.txt" || fail "$1 [$2, +$3): the digests differ"
}
field () { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$T/err"; }

serve sparse sparse-random size=1G seed=3 percent=5
nbdcopy "$(uri sparse)" "$T/sparse.raw"
check_range sparse 0 $((1024 * M))
# The image digest of doc/nbd-stream.md over these block digests is ferry's.
image=$(python3 -c 'import hashlib, sys
outer = hashlib.sha256(b"".join(bytes.fromhex(l) for l in open(sys.argv[1])))
outer.update((1 << 30).to_bytes(8, "little"))
print(outer.hexdigest())' "$T/ferry.txt")
assert_eq "$image  $(uri sparse)" "$("$FERRY" --nbd-digest="$(uri sparse)")" "image digest"
# Only the data extents were read (1.7% of it, in this seed).
[ "$(field read)" -lt $((64 * M)) ] || fail "read $(field read) bytes of a sparse 1 GiB"
[ "$(field zero_blocks)" -gt 15000 ] || fail "zero blocks: $(cat "$T/err")"
check_range sparse $((60 * M)) $((16 * M))

size=$((40 * M + 1234))
serve pattern pattern size=$size
nbdcopy "$(uri pattern)" "$T/pattern.raw"
check_range pattern $((24 * M)) $((size - 24 * M))
assert_eq $((size - 24 * M)) "$(field read)" "bytes read of the pattern"
check_range pattern $((size - 1234)) 1234

# Zero blocks inside data that block status does not report: read, then
# not hashed.
serve zeros --filter=noextents data data="1 @$((3 * 65536)) 2 @$((5 * M - 1)) 3" size=$((5 * M))
nbdcopy "$(uri zeros)" "$T/zeros.raw"
check_range zeros 0 $((5 * M))
assert_eq $((5 * M)) "$(field read)" "bytes read without a map"
assert_eq 77 "$(field zero_blocks)" "zero blocks found by reading"

# Ranges off the blocks or outside the export, and a failing read.
for range in 1:65536 0:65537 $((40 * M)):$((2 * 65536)) $((size + 65536)):0; do
    set +e
    "$FERRY_BLOCK_DIGESTS" "$(uri pattern)" "$range" > /dev/null 2> "$T/err"
    rc=$?
    set -e
    assert_ferry_error 21 "$rc" "$T/err" "is not whole 65536-byte blocks inside the image of $size bytes"
done
serve_failing_reads bad $((64 * M)) $((40 * M))
set +e
within 60 "$FERRY_BLOCK_DIGESTS" "$(uri bad)" 0:$((64 * M)) > /dev/null 2> "$T/err"
rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/err" "failed: Input/output error"
grep -qE "^ferry: nbd\+unix:.*: read at offset [0-9]+ \([0-9]+ bytes\) failed" "$T/err" ||
    fail "no read offset in: $(cat "$T/err")"
offset=$(sed -n 's/.* read at offset \([0-9]*\) .*/\1/p' "$T/err")
[ "$offset" -ge $((40 * M)) ] || fail "a read that did not fail named: $(cat "$T/err")"
