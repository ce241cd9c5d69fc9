#!/usr/bin/env bash
# ferry copy to a host whose DST file system fills up mid-copy (a 4 MiB
# tmpfs, an image with 16 MiB of data), with 1 and 4 streams (issue 25):
# the copy ends in seconds with the remote half's export failure, exit 30,
# and a line that names the host, the cause (no space) and where DST is
# complete (with 4 streams, one per remote half that hit it before the
# copy was cut).  No local half is left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
[ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
start_sshd main /usr/bin:/bin
sparse_image "$T/a.img" 32 64
mkdir "$T/small"
mount -t tmpfs -o size=4M ferry-test "$T/small" || skip "cannot mount a tmpfs"
unmount_small () { umount "$T/small" 2> /dev/null || true; }
cleanup_fn unmount_small
host=$(id -un)@127.0.0.1:$SSHD_PORT

for streams in 1 4; do
    rm -f "$T/small/up.img"
    rc=0
    start=$SECONDS
    within 60 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" \
        --streams=$streams "$T/a.img" "ssh://$host$T/small/up.img?keyfile=$SSH_KEY" \
        2> "$T/err" || rc=$?
    cat "$T/err" >&2
    [ $((SECONDS - start)) -le 30 ] || fail "--streams=$streams: took $((SECONDS - start)) s"
    assert_eq 30 "$rc" "--streams=$streams: exit code"
    # One line; with streams, one per remote half that hit the full disk
    # before the copy was cut (their lines cross on the way).
    lines=$(wc -l < "$T/err")
    [ "$lines" -ge 1 ] && [ "$lines" -le "$streams" ] || fail "--streams=$streams: $lines lines"
    [ "$(grep -c "^ferry: $host.*No space left on device" "$T/err")" = "$lines" ] ||
        fail "--streams=$streams: a line does not name the host and the cause: $(cat "$T/err")"
    ! pgrep -f -- "--remote-helper=$FERRY copy" > /dev/null || fail "--streams=$streams: a local half is left"
done
