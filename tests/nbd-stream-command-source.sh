#!/usr/bin/env bash
# nbdcopy's '[ CMD ARGS... ]' form on both sides: qemu-nbd serving a qcow2,
# started with systemd socket activation, one connection each.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-nbd qemu-io
qemu-img create -q -f qcow2 "$T/src.qcow2" 256M
qemu-io -f qcow2 -c 'write -P 0x33 10M 5M' -c 'write -P 0x44 255M 1M' "$T/src.qcow2" > /dev/null
qemu-img create -q -f qcow2 "$T/dst.qcow2" 256M
within 60 "$FERRY" -v --nbd-send [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] 2> "$T/send.err" |
    within 60 "$FERRY" --nbd-receive=[ qemu-nbd -f qcow2 "$T/dst.qcow2" ] ||
    fail "copy between commands: $(cat "$T/send.err")"
qemu-img compare "$T/src.qcow2" "$T/dst.qcow2" >&2 || fail "the qcow2 copy differs"
assert_eq $((6 * 1024 * 1024)) "$(summary_field "$T/send.err" data)" "data bytes"
allocated=$(qemu-img map --output=json "$T/dst.qcow2" | python3 -c '
import json, sys; print(sum(e["length"] for e in json.load(sys.stdin) if e["data"]))')
assert_eq $((6 * 1024 * 1024)) "$allocated" "allocated bytes in the destination qcow2"
"$FERRY" --nbd-digest [ qemu-nbd -r -f qcow2 "$T/dst.qcow2" ] > "$T/d1"
"$FERRY" --nbd-digest [ qemu-nbd -r -f qcow2 "$T/src.qcow2" ] > "$T/d2"
assert_eq "$(cut -d' ' -f1 "$T/d2")" "$(cut -d' ' -f1 "$T/d1")" "digests of source and copy"
