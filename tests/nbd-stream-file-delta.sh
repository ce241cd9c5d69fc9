#!/usr/bin/env bash
# --streams and --delta with local files on both ends (the remote half's
# DEST on the ssh host): the ranges of several streams land in one file
# that each stream opens (and sizes) itself, and a refresh after two
# blocks changed sends those two only, up and down.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
SIZE=$((64 * 1024 * 1024 + 1000))
sparse_image "$T/a.img" 64 26
truncate -s "$SIZE" "$T/a.img"
remote_copy up "$T/a.img" "$T/b.img" --streams=2
assert_eq 0 "$REMOTE_RC" "copy into a new DEST: exit code"
cmp "$T/a.img" "$T/b.img" || fail "the copy differs"

# One block of data and one in a hole change.
printf 'changed' | dd of="$T/a.img" bs=1 seek=$((5 * 65536 + 17)) conv=notrunc status=none
head -c $((SIZE - 64 * 1024 * 1024)) /dev/urandom |
    dd of="$T/a.img" bs=1K seek=$((64 * 1024)) conv=notrunc status=none
remote_copy up "$T/a.img" "$T/b.img" --streams=2 --delta -v
assert_eq 0 "$REMOTE_RC" "--delta into the file (upload): exit code"
assert_contains "$T/remote.err" "ferry: delta: compared=1025 blocks, sent=2 " "upload: blocks sent"
cmp "$T/a.img" "$T/b.img" || fail "upload: the copy differs"

printf 'again' | dd of="$T/a.img" bs=1 seek=$((900 * 65536)) conv=notrunc status=none
remote_copy down "$T/a.img" "$T/b.img" --streams=2 --delta -v
assert_eq 0 "$REMOTE_RC" "--delta into the file (download): exit code"
assert_contains "$T/remote.err" "ferry: delta: compared=1025 blocks, sent=1 " "download: blocks sent"
cmp "$T/a.img" "$T/b.img" || fail "download: the copy differs"
