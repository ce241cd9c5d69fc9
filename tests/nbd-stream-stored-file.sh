#!/usr/bin/env bash
# A stream stored in a regular file (a sparse backup) and restored later;
# the file holds the data and little more.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
# 1 GiB in the plain build; 256 MiB in the deferred-unref and sanitizer
# builds (.ci/run's time: python3's digest of it is most of the test's).
size=1G
[ -n "${FERRY_TEST_PLAIN:-}" ] || size=256M
serve src sparse-random size=$size seed=11 percent=10
within 120 "$FERRY" -v --nbd-send="$(uri src)" > "$T/backup.stream" 2> "$T/send.err" ||
    fail "backup: $(cat "$T/send.err")"
data=$(summary_field "$T/send.err" data)
[ "$(stat -c %s "$T/backup.stream")" -le $((data + data / 100 + 65536)) ] ||
    fail "backup of $(stat -c %s "$T/backup.stream") bytes for $data data bytes"
serve dst memory size=$size
within 120 "$FERRY" --nbd-receive="$(uri dst)" < "$T/backup.stream" || fail "restore"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 || fail "the restore differs"
assert_eq "$(independent_digest "$(uri src)")  $(uri dst)" "$("$FERRY" --nbd-digest="$(uri dst)")" "digest"
# The stream's own parser check reads the file as the unit test does.
"$FERRY_BUILD_ROOT/tests/nbd-stream-format-test" "$T/backup.stream" || fail "the stored stream does not parse"
