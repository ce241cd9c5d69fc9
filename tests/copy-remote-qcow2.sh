#!/usr/bin/env bash
# ferry copy with a qcow2 on either host, over the test sshd: an upload
# into a qcow2 that does not exist yet on HOST (the remote ferry creates it
# at SRC's size, --create-size), a download of it into a new local qcow2
# (created at the stream's size), in
# scp's HOST:PATH form (the host from ~/.ssh/config) and as
# ssh://HOST:PORT/PATH; a qcow2 to and from a raw file on HOST with
# --streams=1 and 4 (a raw DST takes several writers), holes kept; ferry
# digest HOST:PATH computed on HOST, equal to python3's over the raw bytes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-nbd qemu-io
start_sshd main /usr/bin:/bin
ssh_host_alias testhost
M=$((1024 * 1024))
qemu-img create -q -f qcow2 "$T/src.qcow2" 128M
qemu-io -f qcow2 -c 'write -P 0x33 10M 5M' -c 'write -P 0x44 127M 1M' "$T/src.qcow2" > /dev/null
mkdir "$T/far"

copy () {  # ARGS...: ferry copy through the test sshd, ferry as the remote helper
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" "$@"
}

# Upload into a new qcow2 (the streams come down to one: one writer).
copy --dst-format=qcow2 --streams=4 "$T/src.qcow2" "testhost:$T/far/dst.qcow2" ||
    fail "upload into a new qcow2"
qemu-img compare "$T/src.qcow2" "$T/far/dst.qcow2" >&2 || fail "the uploaded qcow2 differs"
assert_eq "qcow2 $((128 * M))" "$(format_and_size "$T/far/dst.qcow2")" \
    "the new remote DST's format and size"

# Download it into a new local qcow2, over ssh://: created at the size
# that the stream's header gives.
copy --dst-format=qcow2 --streams=4 \
    "ssh://127.0.0.1:$SSHD_PORT$T/far/dst.qcow2?keyfile=$SSH_KEY" "$T/back.qcow2" ||
    fail "download of a qcow2"
qemu-img compare "$T/src.qcow2" "$T/back.qcow2" >&2 || fail "the downloaded qcow2 differs"
assert_eq "qcow2 $((128 * M))" "$(format_and_size "$T/back.qcow2")" \
    "the new local DST's format and size"

# A qcow2 to and from a raw file on HOST, with one stream and with four.
for streams in 1 4; do
    rm -f "$T/far/raw.img" "$T/down.img"
    copy --streams=$streams "$T/src.qcow2" "testhost:$T/far/raw.img" ||
        fail "upload of a qcow2 into a raw file, --streams=$streams"
    qemu-img compare -f qcow2 -F raw "$T/src.qcow2" "$T/far/raw.img" >&2 ||
        fail "upload of a qcow2 into a raw file, --streams=$streams: the copy differs"
    assert_eq "$((10 * M)) $((15 * M))
$((127 * M)) $((128 * M))" "$(data_map "$T/far/raw.img")" \
        "upload of a qcow2 into a raw file, --streams=$streams: the SEEK_DATA map"
    copy --streams=$streams "testhost:$T/far/dst.qcow2" "$T/down.img" ||
        fail "download of a qcow2 into a raw file, --streams=$streams"
    qemu-img compare -f qcow2 -F raw "$T/src.qcow2" "$T/down.img" >&2 ||
        fail "download of a qcow2 into a raw file, --streams=$streams: the copy differs"
    assert_eq "$(data_map "$T/far/raw.img")" "$(data_map "$T/down.img")" \
        "download of a qcow2 into a raw file, --streams=$streams: the SEEK_DATA map"
done

# ferry digest on HOST: python3's digest of the guest's bytes, as typed.
want=$(python3 "$CHECK" digest "$T/down.img" $((128 * M)))
assert_eq "$want  testhost:$T/far/dst.qcow2" \
    "$(env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" digest --remote-helper="$FERRY" \
        "testhost:$T/far/dst.qcow2")" "ferry digest HOST:PATH"

# Both sides remote: refused.
rc=0
copy "testhost:$T/a" "testhost:$T/b" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "exit code of two remote sides"
grep -q "at most one of SRC and DST may be on another host" "$T/err" || fail "message: $(cat "$T/err")"
