#!/usr/bin/env bash
# qemu-img convert reads a qcow2 image that qemu-nbd serves, through a
# ferry listener that runs --nbd for each connection; the raw result
# matches the image's contents.
. "$(dirname "$0")/lib.sh"
need qemu-img qemu-nbd qemu-io

qemu-img create -q -f qcow2 "$T/disk.qcow2" 64M
qemu-io -f qcow2 -c 'write -P 0x55 0 4M' -c 'write -P 0xaa 40M 1M' "$T/disk.qcow2" >/dev/null
qemu-img convert -f qcow2 -O raw "$T/disk.qcow2" "$T/want.raw"
bg qemu-nbd -k "$T/qemu.sock" -f qcow2 -r "$T/disk.qcow2"
wait_for_socket "$T/qemu.sock"
bg "$FERRY" -l -k --nbd --stats-file "$T/stats" "unix:$T/ferry.sock" "unix:$T/qemu.sock"
wait_for_socket "$T/ferry.sock"

within 60 qemu-img convert -f raw -O raw "nbd+unix:///?socket=$T/ferry.sock" "$T/got.raw" ||
    fail "qemu-img convert through ferry failed"
qemu-img compare -q -f raw -F raw "$T/want.raw" "$T/got.raw" || fail "the converted image differs"
# ferry writes a connection's stats when it sees the end, a moment after
# qemu-img exits (longer under valgrind).
has_read_stats () { grep -qs "nbd: cmd=read" "$T/stats"; }
wait_until 30 has_read_stats
cat "$T/stats" >&2
assert_contains "$T/stats" "nbd: cmd=read" "read stats"
