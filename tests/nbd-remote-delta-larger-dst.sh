#!/usr/bin/env bash
# --delta where DST is larger than SRC, whose size is not a multiple of
# the 64 KiB block: the stream mode allows a larger destination, so
# --delta must too (review h16q: the last range's DEST digests were
# refused as "not whole blocks inside the export").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-io qemu-img
start_sshd main /usr/bin:/bin
serve src pattern size=1000000
serve dst memory size=1048576
remote_copy up "$(uri src)" "$(uri dst)" --streams=2
assert_eq 0 "$REMOTE_RC" "plain copy into a larger DST: exit code"
# The short last block (983040 to 1000000) differs: it is sent.
qemu-io -f raw -c 'write -q -P 7 983040 100' "$(uri dst)" || fail "qemu-io"
remote_copy up "$(uri src)" "$(uri dst)" --streams=2 --delta -v
assert_eq 0 "$REMOTE_RC" "--delta into a larger DST (upload): exit code"
assert_contains "$T/remote.err" "ferry: delta: compared=16 blocks, sent=1 " "upload: blocks sent"
within 60 qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 || fail "upload: the copy differs"
serve back memory size=1048576
remote_copy down "$(uri src)" "$(uri back)" --streams=2 --delta -v
assert_eq 0 "$REMOTE_RC" "--delta into a larger DST (download): exit code"
within 60 qemu-img compare -f raw -F raw "$(uri src)" "$(uri back)" >&2 || fail "download: the copy differs"
