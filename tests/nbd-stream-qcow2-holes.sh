#!/usr/bin/env bash
# qemu-nbd serving a qcow2 with holes (it answers reads of them with
# OFFSET_HOLE chunks, and maps them as zero), data, and written zeros,
# through a pipe into nbdkit memory.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-nbd qemu-io
qemu-img create -q -f qcow2 "$T/disk.qcow2" 1G
qemu-io -f qcow2 -c 'write -P 0x5a 1M 3M' -c 'write -P 0 100M 1M' -c 'write -z 200M 64M' \
    -c 'write -P 0x11 1023M 1M' "$T/disk.qcow2" > /dev/null
bg qemu-nbd -t -e 4 -r -f qcow2 -k "$T/src.sock" "$T/disk.qcow2"
wait_for_socket "$T/src.sock"
serve dst memory size=1G
roundtrip "$(uri src)" "$(uri dst)"
data=$(summary_field "$T/send.err" data)
assert_eq $((4 * 1024 * 1024)) "$data" "data bytes sent (the 1 MiB written as zeros is zero)"
