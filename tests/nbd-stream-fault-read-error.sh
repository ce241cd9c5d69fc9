#!/usr/bin/env bash
# nbdkit fails the reads past 100 MiB: the sender names the read, its offset
# and the server's errno, and exits 20 (an NBD command failed).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve_failing_reads src 256M $((100 * 1024 * 1024))
set +e
within 60 "$FERRY" --nbd-send="$(uri src)" > /dev/null 2> "$T/err"
rc=$?
set -e
assert_ferry_error 20 "$rc" "$T/err" "failed: Input/output error"
grep -qE "^ferry: nbd\+unix:.*: read at offset [0-9]+ \([0-9]+ bytes\) failed" "$T/err" ||
    fail "no read offset in: $(cat "$T/err")"
