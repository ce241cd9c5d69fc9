#!/usr/bin/env bash
# --stats=json in a remote copy (ferry copy through the test sshd, as
# copy-remote): one object, with the local half's counts as its -v line
# says them (--streams=1, an upload), the controller's ranges, image, data
# and digest as -v's "copy:" line and each stream's as its "stream N:"
# line (--streams=2, a download), exit code 0; an upload into a missing
# remote directory has its non-zero exit code in the object.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
J=$FERRY_SOURCE_ROOT/tests/stats-json.py
start_sshd main /usr/bin:/bin
cat >> "$SSH_HOME/.ssh/config" <<CONFIG
Host testhost
    HostName 127.0.0.1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $SSH_KEY
CONFIG
copy () {  # ARGS...: ferry copy through the test sshd, ferry as the remote helper
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" "$@"
}
sparse_image "$T/a.img" 64 40
mkdir "$T/far"

# --streams=1, an upload: the local sender's object.
copy -v --stats=json --streams=1 "$T/a.img" "testhost:$T/far/up.img" 2> "$T/err" ||
    fail "upload: $(cat "$T/err")"
cat "$T/err" >&2
cmp "$T/a.img" "$T/far/up.img" || fail "upload: the copy differs"
grep '^{' "$T/err" | python3 -m json.tool > /dev/null || fail "the upload's object is not JSON"
assert_eq 1 "$(python3 "$J" count "$T/err")" "the upload's objects"
assert_eq "remote-copy upload 1 0" \
    "$(python3 "$J" get "$T/err" 0 type direction streams exit_code | paste -sd ' ')" \
    "the upload's type, direction, streams and exit code"
v_send=$(sed -nE 's/^ferry: send: data=([0-9]+) zero=([0-9]+) wire=([0-9]+) requests=([0-9]+) .* digest=([0-9a-f]+)$/\1 \2 \3 \4 \5/p' "$T/err")
[ -n "$v_send" ] || fail "no -v line of the local sender"
assert_eq "send $v_send 0" "$(python3 "$J" get "$T/err" 0 local.0.type local.0.data local.0.zero \
    local.0.wire local.0.requests local.0.digest local.0.exit_code | paste -sd ' ')" \
    "the local sender's counts, as -v's"

# --streams=2, a download: the controller's counts.
copy -v --stats=json:"$T/down.json" --streams=2 "testhost:$T/far/up.img" "$T/down.img" \
    2> "$T/err" || fail "download: $(cat "$T/err")"
cat "$T/err" "$T/down.json" >&2
cmp "$T/a.img" "$T/down.img" || fail "download: the copy differs"
python3 -m json.tool "$T/down.json" > /dev/null || fail "the download's file is not JSON"
assert_eq 0 "$(python3 "$J" count "$T/err")" "objects on stderr with :FILE"
v_copy=$(sed -nE 's/^ferry: copy: streams=([0-9]+) ranges=([0-9]+) image=([0-9]+) data=([0-9]+) seconds=[0-9.]+ digest=([0-9a-f]+)$/\1 \2 \3 \4 \5/p' "$T/err")
[ -n "$v_copy" ] || fail "no -v copy: line"
assert_eq "remote-copy download $v_copy 0" "$(python3 "$J" get "$T/down.json" 0 type direction \
    streams ranges image data digest exit_code | paste -sd ' ')" "the download's counts, as -v's"
for i in 1 2; do
    v_stream=$(sed -nE "s/^ferry: stream $i: ranges=([0-9]+) image=([0-9]+) data=([0-9]+) .*/\1 \2 \3/p" "$T/err")
    assert_eq "$i $v_stream" "$(python3 "$J" get "$T/down.json" 0 per_stream.$((i - 1)).stream \
        per_stream.$((i - 1)).ranges per_stream.$((i - 1)).image per_stream.$((i - 1)).data |
        paste -sd ' ')" "stream $i's counts, as -v's"
done
assert_eq "receive receive" "$(python3 "$J" get "$T/down.json" 0 local.0.type local.1.type |
    paste -sd ' ')" "the local halves' objects"

# A failing copy: its exit code in the object.
rc=0; copy -q --stats=json "$T/a.img" "testhost:$T/no/such/dir/x.img" 2> "$T/err" || rc=$?
[ "$rc" -ne 0 ] || fail "an upload into a missing directory succeeded"
assert_eq "remote-copy $rc" "$(python3 "$J" get "$T/err" -1 type exit_code | paste -sd ' ')" \
    "the failed upload's object"
