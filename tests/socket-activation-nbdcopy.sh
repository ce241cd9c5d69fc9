#!/usr/bin/env bash
# libnbd's "[ CMD ]" starts ferry socket-activated: nbdinfo and nbdcopy
# reach an nbdkit server through 'ferry unix:SRC.sock'.  The copy into a
# second nbdkit is compared with qemu-img compare; then again with --nbd.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdinfo nbdcopy qemu-img

size=128M
bg nbdkit -f -U "$T/src.sock" sparse-random "$size" seed=7 percent=30 runlength=262144
wait_for_socket "$T/src.sock"
bg nbdkit -f -U "$T/dst.sock" memory "$size"
wait_for_socket "$T/dst.sock"

within 30 nbdinfo -- [ "$FERRY" "unix:$T/src.sock" ] > "$T/info"
assert_contains "$T/info" "export-size: 134217728 (128M)" "nbdinfo through ferry"

within 60 nbdcopy -- [ "$FERRY" "unix:$T/src.sock" ] "nbd+unix:///?socket=$T/dst.sock"
within 60 qemu-img compare -f raw -F raw \
    "nbd+unix:///?socket=$T/src.sock" "nbd+unix:///?socket=$T/dst.sock" > "$T/compare" ||
    fail "copy differs: $(cat "$T/compare")"
# The copy carried data, not only zeroes.
nbdinfo --map "nbd+unix:///?socket=$T/dst.sock" | grep -q " 0  *data" ||
    fail "destination holds no data"

# Again with --nbd: the framing checks each activated connection.
bg nbdkit -f -U "$T/dst2.sock" memory "$size"
wait_for_socket "$T/dst2.sock"
# (ferry's stderr is nbdcopy's.)
within 60 nbdcopy -- [ "$FERRY" --nbd "unix:$T/src.sock" ] \
    "nbd+unix:///?socket=$T/dst2.sock" 2> "$T/err"
within 60 qemu-img compare -f raw -F raw \
    "nbd+unix:///?socket=$T/src.sock" "nbd+unix:///?socket=$T/dst2.sock" > "$T/compare" ||
    fail "copy with --nbd differs: $(cat "$T/compare")"
assert_contains "$T/err" "ferry: connection 1 on fd:3: nbd: handshake style=fixed-newstyle" "--nbd stats"
