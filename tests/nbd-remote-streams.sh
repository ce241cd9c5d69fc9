#!/usr/bin/env bash
# --streams=4, each way: 1 GiB of nbdkit sparse-random (10% data) uploaded
# into nbdkit memory on the ssh host over four exec channels of one
# session, and downloaded back; each copy identical and sparse, the image
# digest that ferry composes from the ranges' block digests equal to one
# computed by python3 hashlib (independent_digest), and a -v line per
# channel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve src sparse-random size=1G seed=32 percent=10
serve dst memory size=1G
serve back memory size=1G
host=root@127.0.0.1:$SSHD_PORT

# The source's digest, computed once: the download's source is the upload's
# copy, identical to it (qemu-img compare).
want=$(independent_digest "$(uri src)")
check_streams_copy () {  # WAY SRC DST
    local way=$1 src=$2 dst=$3
    assert_eq 0 "$REMOTE_RC" "$way: exit code"
    within 300 qemu-img compare -f raw -F raw "$src" "$dst" >&2 || fail "$way: the copy differs"
    assert_eq "$want" "$(grep '^ferry: copy: streams=4 ' "$T/remote.err" |
        summary_field /dev/stdin digest)" "$way: the composed digest"
    for i in 1 2 3 4; do
        grep -q "^ferry: stream $i: ranges=[0-9]* image=[0-9]* data=[0-9]* seconds=" \
            "$T/remote.err" || fail "$way: no -v line for stream $i"
    done
    # 1 GiB over four streams: five ranges of 128 MiB, then a quarter of
    # what is left each time, down to 16 MiB: 96, 72, 54, 40, 30, 23, 17,
    # 16, 16, and 16 + 4 MiB (nbd_range_length).
    assert_eq "15 1073741824" "$(sed -n 's/^ferry: stream [0-9]*: ranges=\([0-9]*\) image=\([0-9]*\) .*/\1 \2/p' \
        "$T/remote.err" | awk '{ n += $1; b += $2 } END { print n, b }')" \
        "$way: ranges and bytes over the streams"
    assert_contains "$T/remote.err" "ferry: copy: streams=4 ranges=15 image=1073741824 " \
        "$way: the ranges in the summary"
    nbdinfo --map --json "$src" > "$T/map-src.json"
    nbdinfo --map --json "$dst" > "$T/map-dst.json"
    python3 "$CHECK" holes "$T/map-src.json" "$T/map-dst.json" >&2 || fail "$way: holes differ"
}

remote_copy up "$(uri src)" "$(uri dst)" --streams=4 -v
check_streams_copy up "$(uri src)" "$(uri dst)"
# nbdkit memory advertises multi-conn: no note about it.
! grep -q 'multi-conn' "$T/remote.err" || fail "a multi-conn note for nbdkit memory"
remote_copy down "$(uri dst)" "$(uri back)" --streams=4 -v
check_streams_copy down "$(uri dst)" "$(uri back)"

# An image that ends inside a range and inside a block, over three
# streams; and an empty one (no range at all) over two.
serve odd sparse-random size=268500001 seed=3 percent=20
serve odd-dst memory size=268500001
remote_copy up "$(uri odd)" "$(uri odd-dst)" --streams=3 -v
assert_eq 0 "$REMOTE_RC" "odd size: exit code"
within 300 qemu-img compare -f raw -F raw "$(uri odd)" "$(uri odd-dst)" >&2 || fail "odd size: the copy differs"
assert_eq "$(independent_digest "$(uri odd)")" \
    "$(grep '^ferry: copy: ' "$T/remote.err" | summary_field /dev/stdin digest)" "odd size: digest"
serve empty memory size=0
serve empty-dst memory size=0
remote_copy down "$(uri empty)" "$(uri empty-dst)" --streams=2 -v
assert_eq 0 "$REMOTE_RC" "empty: exit code"
assert_contains "$T/remote.err" "ferry: copy: streams=2 ranges=0 image=0 data=0 " "empty: summary"
