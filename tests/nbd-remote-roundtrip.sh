#!/usr/bin/env bash
# The remote stream mode, one command each way over ferry's own ssh://
# transport: 1 GiB of nbdkit sparse-random (10% data) uploaded into nbdkit
# memory on the ssh host, and downloaded back; each copy identical, sparse,
# and its digests equal to an independent computation.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve src sparse-random size=1G seed=31 percent=10
serve dst memory size=1G
serve back memory size=1G
remote_copy up "$(uri src)" "$(uri dst)" -v
assert_eq 0 "$REMOTE_RC" "upload exit code"
grep -q "^ferry: root@127.0.0.1:$SSHD_PORT: receive: " "$T/recv.err" ||
    fail "the remote receiver's summary does not name the host"
check_copy "$(uri src)" "$(uri dst)"
remote_copy down "$(uri dst)" "$(uri back)" -v
assert_eq 0 "$REMOTE_RC" "download exit code"
check_copy "$(uri dst)" "$(uri back)"
