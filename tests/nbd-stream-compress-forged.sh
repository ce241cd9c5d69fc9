#!/usr/bin/env bash
# Forged compressed streams (nbd-stream-ranged-peer.py, frames by the zstd
# program): a DATA block, then a CDATA record of 128 KiB at offset 65536.
# Its frames holding exactly the record's bytes are applied; frames that
# hold more (with or without the frame's content size), fewer, 256 MiB of
# zeros (within a bounded RSS: decompression has room for the record's
# length only), or no zstd at all are refused with one line that names the
# record's offset (exit 21), and so are a compressed size not below the
# record's length and CDATA without the header's COMPRESS flag; a flag
# this ferry does not know is refused before any record, as a ferry
# without --compress refuses COMPRESS.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need zstd /usr/bin/time
PEER=$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py
size=$((128 * 1024))
receive () {  # CASE: the forged stream into a new $T/dst.img; sets $rc
    rm -f "$T/dst.img"
    truncate -s $((65536 + size)) "$T/dst.img"
    python3 "$PEER" stream "$1" $size > "$T/$1.stream"
    set +e
    within 60 /usr/bin/time -f %M -o "$T/peak_kib" \
        "$FERRY" --nbd-receive="$T/dst.img" < "$T/$1.stream" 2> "$T/err"
    rc=$?
    set -e
    cat "$T/err" >&2
}

receive cdata-good
assert_eq 0 "$rc" "cdata-good: exit code"
python3 -c '
import sys
sys.stdout.buffer.write(bytes([1]) * 65536 + bytes(range(256)) * (int(sys.argv[1]) // 256))' \
    $size > "$T/want.img"
cmp "$T/want.img" "$T/dst.img" || fail "cdata-good: the image differs"

at="the CDATA record at offset 65536 (131072 bytes)"
done_line="; $T/dst.img is complete up to offset 65536 (flushed)"
for case in cdata-more cdata-more-sized cdata-bomb; do
    receive $case
    assert_ferry_error 21 "$rc" "$T/err" "ferry: $at decompresses to more bytes than that$done_line"
    [ "$(wc -l < "$T/err")" -eq 1 ] || fail "$case: more than one line"
done
peak=$(tail -n 1 "$T/peak_kib")
limit=$(rss_limit 32768)
[ "$peak" -lt "$limit" ] || fail "cdata-bomb: peak RSS $peak KiB, over $limit KiB"
receive cdata-less
assert_ferry_error 21 "$rc" "$T/err" "ferry: $at decompresses to fewer bytes than that$done_line"
receive cdata-garbage
assert_ferry_error 21 "$rc" "$T/err" "ferry: $at does not decompress: "
receive cdata-size
assert_ferry_error 21 "$rc" "$T/err" \
    "ferry: CDATA record at offset 65536: compressed size 131072 of 131072 (stream byte 65620, export offset 196608)"
receive cdata-noflag
assert_ferry_error 21 "$rc" "$T/err" "ferry: CDATA record in a stream without the COMPRESS flag"
receive unknown-flag
assert_ferry_error 21 "$rc" "$T/err" "ferry: unknown stream flags 0xd (stream byte 0, export offset 0)"
