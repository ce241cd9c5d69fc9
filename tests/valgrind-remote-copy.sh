#!/usr/bin/env bash
# Every ferry process of a stream round trip and of remote copies under
# valgrind's memcheck, forked and exec'd halves included
# (--trace-children=yes): a stream through a pipe, a --streams=4 upload and
# download, and a --streams=4 --delta upload.  Each copy's bytes are
# checked; any memcheck error, or a definitely lost byte, fails the test.
# The plain build only (valgrind cannot run a sanitizer build).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need valgrind
[ -z "${FERRY_SANITIZER:-}" ] || skip "valgrind cannot run a $FERRY_SANITIZER build"
mkdir "$T/vg"
cat > "$T/vg-ferry" <<VG
#!/bin/sh
exec valgrind --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite \\
    --error-exitcode=99 --log-file='$T/vg/ferry.%p' '$FERRY' "\$@"
VG
chmod +x "$T/vg-ferry"
FERRY=$T/vg-ferry
export FERRY_SANITIZER=valgrind

serve src sparse-random size=32M seed=3 percent=50
serve dst memory size=32M
within 300 "$FERRY" --nbd-send="$(uri src)" |
    within 300 "$FERRY" --nbd-receive="$(uri dst)" || fail "the stream round trip"
assert_eq "$(independent_digest "$(uri src)")" "$(independent_digest "$(uri dst)")" \
    "the stream round trip: DST's digest"

start_sshd main /usr/bin:/bin
sparse_image "$T/a.img" 32 64
mkdir "$T/far"
remote_copy up "$T/a.img" "$T/far/up.img" --streams=4
[ "$REMOTE_RC" -eq 0 ] || fail "upload: exit $REMOTE_RC"
cmp "$T/a.img" "$T/far/up.img" || fail "upload: the copy differs"
remote_copy down "$T/far/up.img" "$T/down.img" --streams=4
[ "$REMOTE_RC" -eq 0 ] || fail "download: exit $REMOTE_RC"
cmp "$T/a.img" "$T/down.img" || fail "download: the copy differs"
printf 'x' | dd of="$T/a.img" bs=1 seek=$((5 * 65536 + 7)) conv=notrunc status=none
remote_copy up "$T/a.img" "$T/far/up.img" --streams=4 --delta
[ "$REMOTE_RC" -eq 0 ] || fail "--delta upload: exit $REMOTE_RC"
cmp "$T/a.img" "$T/far/up.img" || fail "--delta upload: the copy differs"

logs=$(find "$T/vg" -type f | wc -l)
errors=$(cat "$T"/vg/* | awk '/ERROR SUMMARY:/ { n += $4 } END { print n + 0 }')
lost=$(cat "$T"/vg/* | awk '/definitely lost:/ { gsub(",", "", $4); n += $4 } END { print n + 0 }')
# Two for the round trip, then for each copy the local ferry, its halves
# and the remote ones (each exec'd through the remote helper).
[ "$logs" -ge 8 ] || fail "only $logs ferry processes ran under valgrind"
[ "$errors" -eq 0 ] || { cat "$T"/vg/* >&2; fail "valgrind: $errors errors"; }
[ "$lost" -eq 0 ] || { cat "$T"/vg/* >&2; fail "valgrind: $lost bytes definitely lost"; }
echo "valgrind: $logs ferry processes, 0 errors, 0 bytes definitely lost"
