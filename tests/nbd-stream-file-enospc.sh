#!/usr/bin/env bash
# A local DEST on a file system that fills up (an 8 MiB tmpfs, in a mount
# namespace of its own) with a 32 MiB dense image: the write's ENOSPC is
# one line naming DEST and the offset, exit 20, and where DEST is
# complete; ferry copy into it: the same line alone.
. "$(dirname "$0")/lib.sh"
reexec_in_mount_ns
. "$(dirname "$0")/lib-nbd-stream.sh"
mkdir "$T/small"
mount -t tmpfs -o size=8M tmpfs "$T/small" 2>/dev/null || skip "cannot mount a tmpfs"
cleanup_fn umount "$T/small"
head -c $((32 * 1024 * 1024)) /dev/urandom > "$T/a.img"
set +e
"$FERRY" --nbd-send="$T/a.img" 2> "$T/send.err" |
    "$FERRY" --nbd-receive="$T/small/b.img" 2> "$T/err"
rc=${PIPESTATUS[1]}
set -e
cat "$T/send.err" "$T/err" >&2
assert_ferry_error 20 "$rc" "$T/err" "$T/small/b.img: write at offset "
assert_contains "$T/err" "failed: No space left on device; $T/small/b.img is complete up to offset " \
    "ferry's message"
assert_eq 1 "$(wc -l < "$T/err")" "lines of the message"

# The same through ferry copy: the receiver's line alone (the sender,
# still writing, is silenced), and its code.
rm -f "$T/small/b.img"
rc=0
"$FERRY" copy "$T/a.img" "$T/small/b.img" 2> "$T/err" || rc=$?
cat "$T/err" >&2
assert_ferry_error 20 "$rc" "$T/err" "$T/small/b.img: write at offset "
assert_eq 1 "$(wc -l < "$T/err")" "ferry copy: lines of the message"
