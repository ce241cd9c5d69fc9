#!/usr/bin/env bash
# ferry copy with a qcow2 on either host, over the test sshd: an upload
# into a qcow2 that does not exist yet on HOST (the remote ferry creates it
# at SRC's size, --create-size), a download of it into a local qcow2, in
# scp's HOST:PATH form (the host from ~/.ssh/config) and as
# ssh://HOST:PORT/PATH; ferry digest HOST:PATH computed on HOST.
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
assert_eq "qcow2 $((128 * M))" "$(qemu-img info --output=json "$T/far/dst.qcow2" |
    python3 -c 'import json, sys; i = json.load(sys.stdin); print(i["format"], i["virtual-size"])')" \
    "the new remote DST's format and size"

# Download it into a local qcow2 of the same size, over ssh://.
qemu-img create -q -f qcow2 "$T/back.qcow2" 128M
copy --dst-format=qcow2 --streams=4 \
    "ssh://127.0.0.1:$SSHD_PORT$T/far/dst.qcow2?keyfile=$SSH_KEY" "$T/back.qcow2" ||
    fail "download of a qcow2"
qemu-img compare "$T/src.qcow2" "$T/back.qcow2" >&2 || fail "the downloaded qcow2 differs"

# ferry digest: local and on HOST, the same digest, each image as typed.
want=$(cut -d' ' -f1 <<< "$("$FERRY" digest "$T/src.qcow2")")
assert_eq "$want  testhost:$T/far/dst.qcow2" \
    "$(env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" digest --remote-helper="$FERRY" \
        "testhost:$T/far/dst.qcow2")" "ferry digest HOST:PATH"

# Both sides remote: refused.
rc=0
copy "testhost:$T/a" "testhost:$T/b" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "exit code of two remote sides"
grep -q "at most one of SRC and DST may be on another host" "$T/err" || fail "message: $(cat "$T/err")"
