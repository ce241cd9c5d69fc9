#!/usr/bin/env bash
# --stats=json with --nbd --stats-interval 1: a copy that takes a few
# seconds (nbdkit's delay filter, as nbd-stats-interval) gets an
# "nbd-interval" object per interval while it runs, and the relay's object
# holds the NBD counts ("nbd": the handshake and each command, as the
# key=value block has them), which are then not printed as key=value.
# nbdcopy's [ CMD ] is socket activation: ferry forwards, so the relay's
# object is the connection's line, before the forwarder's total.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy python3
J=$FERRY_SOURCE_ROOT/tests/stats-json.py

bg nbdkit -f -U "$T/src.sock" --filter=delay pattern size=4M rdelay=500ms
wait_for_socket "$T/src.sock"
within 60 nbdcopy --requests=1 --request-size=1048576 \
    -- [ "$FERRY" --nbd --stats-interval 1 --stats=json:"$T/stats.json" "unix:$T/src.sock" ] \
    null: 2> "$T/err" || fail "nbdcopy through ferry --nbd failed: $(cat "$T/err")"
cat "$T/err" "$T/stats.json" >&2
! grep -q 'nbd: ' "$T/err" || fail "key=value stats with --stats=json: $(cat "$T/err")"
n=$(python3 "$J" count "$T/stats.json")
[ "$n" -ge 3 ] || fail "no interval object in $(cat "$T/stats.json")"
python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$T/stats.json" ||
    fail "a line of the stats file is not JSON"
assert_eq "nbd-interval fixed-newstyle" "$(python3 "$J" get "$T/stats.json" 0 type \
    nbd.handshake.style | paste -sd ' ')" "the first interval object"
assert_eq "connection 4 4194304 0 0 fixed-newstyle 4194304" "$(python3 "$J" get "$T/stats.json" -2 type \
    nbd.commands.read.ops nbd.commands.read.bytes nbd.commands.read.errors \
    nbd.commands.read.hole_bytes nbd.handshake.style nbd.handshake.size | paste -sd ' ')" \
    "the final object's NBD counts"
assert_eq "$(python3 "$J" get "$T/stats.json" -2 up.bytes down.bytes exit_code)" \
    "$(python3 "$J" get "$T/stats.json" -1 up.bytes down.bytes exit_code)" \
    "the forwarder's total, its one connection's counts"
assert_eq "forward 1" "$(python3 "$J" get "$T/stats.json" -1 type connections | paste -sd ' ')" \
    "the forwarder's total object"
