#!/usr/bin/env bash
# --compress over ssh (the test sshd): nbdkit pattern uploaded and
# downloaded with one stream, the sending half compressing (the local one
# up, the remote one down: --compress reaches it), each copy identical and
# digest-checked, with under a quarter of the data bytes on the wire;
# sparse-random with random content uploaded at its plain wire bytes (its
# records go as DATA); and ferry copy --compress of an ext4 image of real
# files to and from the host over 4 streams (the ranged stream), the bytes
# and the holes kept (the upload's, as ferry wrote them), then --delta
# with it after one block changed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need mkfs.ext4
start_sshd main /usr/bin:/bin
serve src pattern size=64M
serve dst memory size=64M
serve back memory size=64M

shrunk () {  # WHAT FILE: the summary's wire bytes under a quarter of its data
    local data wire
    data=$(summary_field "$2" data) wire=$(summary_field "$2" wire)
    [ $((wire * 4)) -lt "$data" ] || fail "$1: wire bytes $wire, not under a quarter of $data"
    echo "$1: data=$data wire=$wire"
}
remote_copy up "$(uri src)" "$(uri dst)" --compress -v
assert_eq 0 "$REMOTE_RC" "upload exit code"
check_copy "$(uri src)" "$(uri dst)"
shrunk upload "$T/send.err"
remote_copy down "$(uri dst)" "$(uri back)" --compress -v
assert_eq 0 "$REMOTE_RC" "download exit code"
grep -q "^ferry: root@127.0.0.1:$SSHD_PORT: send: " "$T/send.err" ||
    fail "the remote sender's summary does not name the host"
check_copy "$(uri dst)" "$(uri back)"
shrunk download "$T/send.err"

serve random sparse-random size=32M seed=3 percent=50 random-content=true
serve random-dst memory size=32M
"$FERRY" -v --nbd-send="$(uri random)" 2>&1 > /dev/null | tee "$T/plain.err" >&2
remote_copy up "$(uri random)" "$(uri random-dst)" --compress -v
assert_eq 0 "$REMOTE_RC" "sparse-random upload exit code"
check_copy "$(uri random)" "$(uri random-dst)"
plain=$(summary_field "$T/plain.err" wire) wire=$(summary_field "$T/send.err" wire)
[ "$wire" -le "$plain" ] || fail "sparse-random: wire bytes $wire with --compress, $plain without"

ssh_host_alias testhost
mkdir "$T/files" "$T/far"
cp -r "$FERRY_SOURCE_ROOT/src" "$FERRY_SOURCE_ROOT/doc" "$T/files/"
truncate -s 16M "$T/a.img"
mkfs.ext4 -q -d "$T/files" "$T/a.img"
copy () {  # ARGS...: ferry copy through the test sshd, ferry as the remote helper
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" "$@"
}
# The local halves' --stats=json objects: their stream bytes (the
# senders' written up, the receivers' read down) under half their data.
halves_shrunk () {  # WHAT FILE
    python3 -c '
import json, sys
halves = json.load(open(sys.argv[2]))["local"]
data, wire = sum(h["data"] for h in halves), sum(h["wire"] for h in halves)
print("%s: %d halves, data=%d wire=%d" % (sys.argv[1], len(halves), data, wire))
sys.exit(0 if len(halves) > 1 and 0 < wire * 2 < data else 1)' "$1" "$2" ||
        fail "$1: the halves' wire bytes are not under half their data"
}
copy --compress --stats=json:"$T/up.json" "$T/a.img" "testhost:$T/far/up.img" ||
    fail "ferry copy --compress: upload"
cmp "$T/a.img" "$T/far/up.img" || fail "ferry copy --compress: the upload differs"
halves_shrunk "ferry copy upload" "$T/up.json"
copy --compress --stats=json:"$T/down.json" "testhost:$T/far/up.img" "$T/down.img" ||
    fail "ferry copy --compress: download"
cmp "$T/a.img" "$T/down.img" || fail "ferry copy --compress: the download differs"
halves_shrunk "ferry copy download" "$T/down.json"
# The holes: where ferry wrote (the upload's DST), not mkfs's zeros.
assert_eq "$(data_map "$T/far/up.img")" "$(data_map "$T/down.img")" "the download's SEEK_DATA map"
# --delta with it: the blocks that differ go compressed, the rest as SAME.
printf 'changed' | dd of="$T/a.img" bs=1 seek=$((5 * 1024 * 1024)) conv=notrunc status=none
copy --compress --delta -v "$T/a.img" "testhost:$T/far/up.img" 2> "$T/err" ||
    fail "ferry copy --compress --delta: $(cat "$T/err")"
cmp "$T/a.img" "$T/far/up.img" || fail "ferry copy --compress --delta: the copy differs"
assert_contains "$T/err" "ferry: delta: compared=256 blocks, sent=1 " "--delta: blocks sent"
