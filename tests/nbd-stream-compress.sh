#!/usr/bin/env bash
# --compress through a pipe: an ext4 image of real files (mkfs.ext4 -d of
# this source tree) and nbdkit pattern cross as CDATA records, in fewer
# bytes on the wire than their data; nbdkit sparse-random's random
# content does not shrink and crosses as DATA, within 1% of the wire bytes
# without it.  Each copy identical, with the holes, and its digests (over
# the image's bytes) equal to an independent computation.  Both halves'
# memory stays within --in-flight (the sender's reads half of it, the
# compressed records the rest), and --compress where no sender is, or
# with --raw, is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need mkfs.ext4 /usr/bin/time
mkdir "$T/files"
for i in 1 2 3; do
    cp -r "$FERRY_SOURCE_ROOT/src" "$FERRY_SOURCE_ROOT/doc" "$FERRY_SOURCE_ROOT/tests" "$T/files/"
    mv "$T/files/src" "$T/files/src$i"; mv "$T/files/doc" "$T/files/doc$i"
    mv "$T/files/tests" "$T/files/tests$i"
done
truncate -s 32M "$T/ext4.img"
mkfs.ext4 -q -d "$T/files" "$T/ext4.img"

compress_roundtrip () {  # SRC DST [OPTIONS...] (both halves'): sets $data and $wire
    local src=$1 dst=$2 rc_send rc_recv; shift 2
    within 300 /usr/bin/time -f %M -o "$T/send_kib" \
        "$FERRY" -v --compress --nbd-send="$src" "$@" 2> "$T/send.err" |
        within 300 /usr/bin/time -f %M -o "$T/recv_kib" \
            "$FERRY" -v --nbd-receive="$dst" "$@" 2> "$T/recv.err"
    rc_send=${PIPESTATUS[0]} rc_recv=${PIPESTATUS[1]}
    cat "$T/send.err" "$T/recv.err" >&2
    assert_eq 0 "$rc_send" "sender exit code"
    assert_eq 0 "$rc_recv" "receiver exit code"
    check_copy "$src" "$dst"
    data=$(summary_field "$T/send.err" data) wire=$(summary_field "$T/send.err" wire)
}

truncate -s 32M "$T/ext4-copy.img"
compress_roundtrip "$T/ext4.img" "$T/ext4-copy.img"
[ $((wire * 2)) -lt "$data" ] || fail "ext4 image: wire bytes $wire, not under half its data $data"
echo "ext4 image: data=$data wire=$wire"
# Without the digest, the same bytes.
rm "$T/ext4-copy.img"
"$FERRY" --compress --no-verify --nbd-send="$T/ext4.img" | "$FERRY" --nbd-receive="$T/ext4-copy.img"
cmp "$T/ext4.img" "$T/ext4-copy.img" || fail "ext4 image, --no-verify: the copy differs"

serve pattern pattern size=64M
serve pattern-dst memory size=64M
compress_roundtrip "$(uri pattern)" "$(uri pattern-dst)" --in-flight=4M
[ $((wire * 4)) -lt "$data" ] || fail "pattern: wire bytes $wire, not under a quarter of $data"
# The reads and the compressed records, within the bound; the RSS with it
# (about 14 MiB of libraries and heap besides), and the receiver's, which
# holds a CDATA record's compressed bytes and its data at once.
in_flight_max=$(summary_field "$T/send.err" in_flight_max)
[ "$in_flight_max" -le $((4 * 1024 * 1024)) ] || fail "in_flight_max=$in_flight_max, over 4 MiB"
peak=$(tail -n 1 "$T/send_kib") recv_peak=$(tail -n 1 "$T/recv_kib")
limit=$(rss_limit 32768)
[ "$peak" -lt "$limit" ] || fail "sender peak RSS $peak KiB, over $limit KiB"
[ "$recv_peak" -lt "$limit" ] || fail "receiver peak RSS $recv_peak KiB, over $limit KiB"
echo "pattern: data=$data wire=$wire in_flight_max=$in_flight_max peak=$peak KiB" \
    "receiver's peak=$recv_peak KiB"

# Incompressible (random-content: by default each block is one byte
# repeated, which compresses): the records go as DATA, so the wire bytes
# are within 1% of those without --compress, and never more.
serve random sparse-random size=64M seed=5 percent=50 random-content=true
serve random-dst memory size=64M
"$FERRY" -v --nbd-send="$(uri random)" 2>&1 > /dev/null | tee "$T/plain.err" >&2
compress_roundtrip "$(uri random)" "$(uri random-dst)"
plain=$(summary_field "$T/plain.err" wire)
[ "$wire" -le "$plain" ] && [ $((wire * 100)) -ge $((plain * 99)) ] ||
    fail "sparse-random: wire bytes $wire with --compress, $plain without"
echo "sparse-random: data=$data wire=$wire (without --compress: $plain)"

set +e
"$FERRY" --compress --nbd-receive="$(uri random-dst)" < /dev/null 2> "$T/err"; rc=$?
set -e
assert_ferry_error 2 "$rc" "$T/err" "--compress goes with --nbd-send or --remote-nbd-send"
set +e
"$FERRY" --compress --raw --nbd-send="$(uri random)" > /dev/null 2> "$T/err"; rc=$?
set -e
assert_ferry_error 2 "$rc" "$T/err" "not with --raw"
