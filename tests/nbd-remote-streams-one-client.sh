#!/usr/bin/env bash
# --streams=4 uploading into qemu-nbd, which serves one client at a time
# (no --shared): the first stream's remote ferry connects first, copies
# every range, and the others connect once it is gone and find none left.
# The copy completes, identical, instead of a later stream's remote ferry
# holding the only connection while waiting for a local half held back
# until the first stream is up.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-nbd qemu-img
start_sshd main /usr/bin:/bin
serve src sparse-random size=256M seed=5 percent=20
qemu-img create -q -f raw "$T/dst.img" 256M
bg qemu-nbd -t -f raw -k "$T/dst.sock" "$T/dst.img"
wait_for_socket "$T/dst.sock"

remote_copy up "$(uri src)" "$(uri dst)" --streams=4 -v
assert_eq 0 "$REMOTE_RC" "exit code"
within 60 qemu-img compare -f raw -F raw "$(uri src)" "$T/dst.img" >&2 || fail "the copy differs"
n=$(sed -n 's/^ferry: copy: streams=4 ranges=\([0-9]*\) .*/\1/p' "$T/remote.err")
assert_eq "$n" "$(sed -n 's/^ferry: stream 1: ranges=\([0-9]*\) .*/\1/p' "$T/remote.err")" \
    "stream 1 copied every range"
