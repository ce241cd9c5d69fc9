#!/usr/bin/env bash
# A local SOURCE or DEST that cannot be opened, or is neither a regular
# file nor a block device: one line naming the path as given, exit 3 (as
# a failed connect), and nothing created or changed.  A SOURCE that
# shrinks while it is read: one line saying so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
cd "$T"
truncate -s 1M a.img
mkdir dir

expect_open_error () {  # WHAT REASON CMD...
    local what=$1 reason=$2 rc; shift 2
    set +e
    "$@" < /dev/null > out 2> err
    rc=$?
    set -e
    cat err >&2
    assert_ferry_error 3 "$rc" err "cannot open $what: $reason"
    assert_eq 1 "$(wc -l < err)" "lines of the message"
}

expect_open_error missing.img "No such file or directory" "$FERRY" --nbd-send=missing.img
expect_open_error missing.img "No such file or directory" "$FERRY" --nbd-digest=missing.img
expect_open_error dir "Is a directory" "$FERRY" --nbd-send=dir
expect_open_error dir/ "Is a directory" "$FERRY" --nbd-receive=dir/
expect_open_error no-dir/b.img "No such file or directory" "$FERRY" --nbd-receive=no-dir/b.img
expect_open_error /dev/null "not a regular file or a block device" "$FERRY" --nbd-send=/dev/null
[ ! -e missing.img ] || fail "the failed send created its SOURCE"

# Permission denied: as nobody (root opens anything).
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
    chmod 600 a.img
    chmod 755 "$T"
    nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
    expect_open_error a.img "Permission denied" "${nobody[@]}" "$FERRY" --nbd-send=a.img
    expect_open_error a.img "Permission denied" "${nobody[@]}" "$FERRY" --nbd-receive=a.img
    expect_open_error new.img "Permission denied" "${nobody[@]}" "$FERRY" --nbd-receive=new.img
else
    echo "not root: the permission checks are skipped" >&2
fi

# A SOURCE that shrinks while it is read: the line says so (the read past
# the new end, or the map of it, whichever comes first), exit 20.
head -c 64M /dev/zero | tr '\0' 'x' > big.img
set +e
"$FERRY" --nbd-send=big.img --raw 2> err |
    { head -c 1048576 > /dev/null; truncate -s 1M big.img; cat > /dev/null; }
rc=${PIPESTATUS[0]}
set -e
cat err >&2
assert_ferry_error 20 "$rc" err "the file ends before that: it shrank while ferry read it"
grep -q "^ferry: big.img: " err || fail "the line names big.img: $(cat err)"
assert_eq 1 "$(wc -l < err)" "lines of the shrink's message"
