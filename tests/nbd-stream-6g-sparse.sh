#!/usr/bin/env bash
# A 6 GiB export with a few bytes of data: ZERO records longer than 4 GiB
# (32-bit length limits), which the receiver zeroes in pieces below 4 GiB.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((6 * 1024 * 1024 * 1024))
serve src data data="@4096 1 2 3 @$((5 * 1024 * 1024 * 1024 + 7)) 9" size=$size
serve dst memory size=$size
roundtrip "$(uri src)" "$(uri dst)"
# One ZERO record spans more than 4 GiB.
"$FERRY" --nbd-send="$(uri src)" > "$T/s.stream"
python3 - "$T/s.stream" <<'PY' || fail "no ZERO record above 4 GiB"
import struct, sys
s = open(sys.argv[1], "rb").read()
pos, big = 36, False
while True:
    kind, off, length = struct.unpack(">IQQ", s[pos:pos + 20])
    pos += 24
    if kind == 3:
        break
    if kind == 1:
        pos += length
    if kind == 2 and length >= 1 << 32:
        big = True
sys.exit(0 if big else 1)
PY
