#!/usr/bin/env bash
# --raw both ways against the real nbdcopy at the other end:
# ferry --raw --nbd-send | nbdcopy - DST, and nbdcopy SRC - | ferry --raw
# --nbd-receive (which scans for zeros, so the destination stays sparse).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((512 * 1024 * 1024))
serve src sparse-random size=$size seed=13 percent=10
serve dst1 memory size=$size
serve dst2 memory size=$size
within 120 "$FERRY" --raw --nbd-send="$(uri src)" | within 120 nbdcopy - "$(uri dst1)" ||
    fail "ferry --raw | nbdcopy"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst1)" >&2 || fail "ferry --raw -> nbdcopy differs"
"$FERRY" --raw --nbd-send="$(uri src)" | cmp - <(nbdcopy "$(uri src)" -) || fail "raw bytes differ from nbdcopy's"

within 120 nbdcopy "$(uri src)" - | within 120 "$FERRY" -v --raw --nbd-receive="$(uri dst2)" 2> "$T/recv.err" ||
    fail "nbdcopy | ferry --raw: $(cat "$T/recv.err")"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst2)" >&2 || fail "nbdcopy -> ferry --raw differs"
nbdinfo --map --json "$(uri src)" > "$T/map-src.json"
nbdinfo --map --json "$(uri dst2)" > "$T/map-dst.json"
python3 "$CHECK" holes "$T/map-src.json" "$T/map-dst.json" >&2 || fail "raw receive is not sparse"
