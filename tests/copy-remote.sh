#!/usr/bin/env bash
# ferry copy of raw files to and from another host (the test sshd), as
# scp's HOST:PATH: an upload and a download with --streams=1 and 4 (the
# bytes and the holes kept); --delta into the remote file after 1% of its
# blocks changed sends exactly those blocks; hostile remote paths (quotes,
# $(...), ';', a leading '-', a newline, `...`) arrive as one literal
# path, and so does one that starts with '-' itself; a remote directory (DIR/ and DIR) takes SRC's name; a missing
# remote SRC is named as typed (HOST:PATH), in one line; a missing local
# SRC leaves no DST on the host, and a stopped one the DST it began;
# --check-source on a download, and on an upload into DIR; ferry
# digest HOST:PATH whose far ferry fails or is killed exits non-zero; a
# non-ASCII name under the C locale at both ends; HOST:~/PATH and
# USER@[V6]:PATH as scp takes them, and an ssh:// URL's path decoded; a
# far host without qemu-nbd: one line that names it, exit 30; and a server
# whose MaxSessions is below --streams: its refusal says so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
ssh_host_alias testhost
copy () {  # ARGS...: ferry copy through the test sshd, ferry as the remote helper
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" "$@"
}
sparse_image "$T/a.img" 256 256
mkdir "$T/far"

for streams in 1 4; do
    rm -f "$T/far/up.img" "$T/down.img"
    copy --streams=$streams "$T/a.img" "testhost:$T/far/up.img" || fail "upload, --streams=$streams"
    cmp "$T/a.img" "$T/far/up.img" || fail "upload, --streams=$streams: the copy differs"
    assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/far/up.img")" \
        "upload, --streams=$streams: the SEEK_DATA map"
    copy --streams=$streams "testhost:$T/far/up.img" "$T/down.img" || fail "download, --streams=$streams"
    cmp "$T/a.img" "$T/down.img" || fail "download, --streams=$streams: the copy differs"
    assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/down.img")" \
        "download, --streams=$streams: the SEEK_DATA map"
done

# 1% of the 4096 blocks change (41, one byte each, in data and in holes):
# each byte becomes its complement, so that none keeps its value (random
# data held a byte already 'x' once in 256).
for i in $(seq 0 40); do
    off=$((i * 100 * 65536 + i))
    byte=$(od -An -tu1 -j "$off" -N1 "$T/a.img")
    printf "\\$(printf %03o $((byte ^ 255)))" | dd of="$T/a.img" bs=1 seek="$off" conv=notrunc status=none
done
copy --delta -v "$T/a.img" "testhost:$T/far/up.img" 2> "$T/err" || fail "--delta: $(cat "$T/err")"
cmp "$T/a.img" "$T/far/up.img" || fail "--delta: the copy differs"
assert_contains "$T/err" "ferry: delta: compared=4096 blocks, sent=41 " "--delta: blocks sent"

# Hostile remote names: each one literal path (no '/': the shell's
# expansions would change the name, and cmp would find no such file).
hostile=("a b'c\"d\$(id);e" "-lead" "semi;id" "new
line" "back\`id\`tick \$HOME")
for name in "${hostile[@]}"; do
    copy --streams=2 "$T/a.img" "testhost:$T/far/$name" || fail "upload to '$name'"
    cmp "$T/a.img" "$T/far/$name" || fail "upload to '$name': the copy differs"
done
assert_eq ${#hostile[@]} "$(find "$T/far" -mindepth 1 -maxdepth 1 ! -name up.img -printf x | wc -c)" \
    "files made by the hostile uploads"

# A remote path that starts with '-' (scp's HOST:-NAME, in the login's home
# directory): a path both ways, never an option.
lead=-ferry-copy-remote-$$.img
home=$(getent passwd "$(id -un)" | cut -d: -f6)
cleanup_fn rm -f "$home/$lead"
copy "$T/a.img" "testhost:$lead" || fail "upload to '$lead'"
cmp "$T/a.img" "$home/$lead" || fail "upload to '$lead': the copy differs"
copy "testhost:$lead" "$T/lead.img" || fail "download of '$lead'"
cmp "$T/a.img" "$T/lead.img" || fail "download of '$lead': the copy differs"

# A remote directory, with and without the slash: DIR/basename(SRC).
mkdir "$T/far/d1" "$T/far/d2"
copy "$T/a.img" "testhost:$T/far/d1/" || fail "upload into DIR/"
copy "$T/a.img" "testhost:$T/far/d2" || fail "upload into DIR"
cmp "$T/a.img" "$T/far/d1/a.img" || fail "upload into DIR/: the copy differs"
cmp "$T/a.img" "$T/far/d2/a.img" || fail "upload into DIR: the copy differs"

fails_in_one_line () {  # WHAT TEXT SRC DST: exit 30, one line holding TEXT
    local rc=0
    copy "$3" "$4" 2> "$T/err" || rc=$?
    assert_eq 30 "$rc" "$1: exit code"
    assert_eq 1 "$(wc -l < "$T/err")" "$1: one line"
    assert_contains "$T/err" "$2" "$1: the message"
}

# A remote SRC that is missing: named as typed.
fails_in_one_line "a missing remote SRC" \
    "cannot open testhost:$T/far/none.img: No such file or directory" \
    "testhost:$T/far/none.img" "$T/none.img"
[ ! -e "$T/none.img" ] || fail "a download of a missing remote SRC left its DST"
# A name that is not ASCII, on a host whose sessions have no UTF-8 locale
# (the test sshd sets none): its bytes as given, both ways, and here too.
far_name="$T/far/ñämé-日本.img"
copy "$T/a.img" "testhost:$far_name" 2> "$T/err" || fail "upload to a non-ASCII name: $(cat "$T/err")"
cmp "$T/a.img" "$far_name" || fail "upload to a non-ASCII name: the copy differs"
LC_ALL=C copy --streams=2 "testhost:$far_name" "$T/here-ñ.img" 2> "$T/err" ||
    fail "download of a non-ASCII name: $(cat "$T/err")"
cmp "$T/a.img" "$T/here-ñ.img" || fail "download of a non-ASCII name: the copy differs"
rm -f "$far_name" "$T/here-ñ.img"

# scp's HOST:~/PATH is PATH in the login's home.
cleanup_fn rm -f "$home/ferry-tilde-test.img"
copy "$T/a.img" "testhost:~/ferry-tilde-test.img" 2> "$T/err" || fail "upload to ~/: $(cat "$T/err")"
cmp "$T/a.img" "$home/ferry-tilde-test.img" || fail "upload to ~/: the copy differs"
rm -f "$home/ferry-tilde-test.img"
# An ssh:// URL's path is percent-decoded, as scp's scp:// is.
copy "$T/a.img" "ssh://testhost$T/far/sp%20ace%3F.img" 2> "$T/err" || fail "ssh:// with %20: $(cat "$T/err")"
cmp "$T/a.img" "$T/far/sp ace?.img" || fail "ssh:// with %20: the copy differs"
rc=0
copy "$T/a.img" "ssh://testhost$T/far/bad%zz.img" 2> "$T/err" || rc=$?
assert_ferry_error 2 "$rc" "$T/err" "its path has a bad %-escape"
# USER@[V6]:PATH is scp's form too: an address (refused, or no such user
# there), not a usage error.
rc=0
copy --connect-timeout=5 "$T/a.img" "nobody@[::1]:/tmp/x.img" 2> "$T/err" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 2 ] || fail "USER@[::1]:PATH: exit $rc: $(cat "$T/err")"
! grep -q "invalid address" "$T/err" || fail "USER@[::1]:PATH: $(cat "$T/err")"

# A stop while the first stream writes a new DST, before the other
# streams' headers came (their local halves wait for its first range): the
# receiver that created the file (any of them) leaves it, sized, with what
# was written (--delta resumes it).  A slow SRC: 1 s a read.
bg nbdkit -f -U "$T/slow.sock" --filter=delay pattern size=512M delay-read=1
wait_for_socket "$T/slow.sock"
copy --streams=4 "nbd+unix:///?socket=$T/slow.sock" "testhost:$T/far/stopped.img" \
    2> "$T/err" &
pid=$!
# The first stream's header came (DST has SRC's size); its first range
# takes seconds more.
wait_until 60 eval '[ "$(stat -c %s "$T/far/stopped.img" 2> /dev/null)" = $((512 * 1024 * 1024)) ]'
kill -TERM $pid
rc=0
wait $pid || rc=$?
assert_eq 143 "$rc" "a stopped upload into a new DST: exit code ($(cat "$T/err"))"
wait_until 10 eval "! pgrep -f -- '--nbd-receive=$T/far/stopped.img' > /dev/null"
assert_eq $((512 * 1024 * 1024)) "$(stat -c %s "$T/far/stopped.img")" \
    "a stopped upload into a new DST: its size"

# --check-source on a download (SRC read again on the host), into DIR/.
mkdir "$T/here"
copy --check-source "testhost:$T/far/d1/a.img" "$T/here/" 2> "$T/err" ||
    fail "--check-source on a download: $(cat "$T/err")"
cmp "$T/a.img" "$T/here/a.img" || fail "--check-source on a download: the copy differs"

# --check-source on an upload into a far directory named without its
# slash: the far digest is of DIR/basename(SRC), which its receiver wrote.
copy --check-source "$T/a.img" "testhost:$T/far/d2" 2> "$T/err" ||
    fail "--check-source on an upload into DIR: $(cat "$T/err")"

# ferry digest HOST:PATH that fails on the host: its line, and its code.
digest () { within 60 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" digest --remote-helper="$FERRY" "$@"; }
rc=0
digest "$T/a.img" "testhost:$T/far/none.img" > "$T/out" 2> "$T/err" || rc=$?
assert_ferry_error 30 "$rc" "$T/err" "cannot open testhost:$T/far/none.img: No such file or directory"
assert_eq 1 "$(wc -l < "$T/err")" "a remote digest of a missing image: one line"
assert_eq "$("$FERRY" digest "$T/a.img")" "$(cat "$T/out")" "a remote digest of a missing image: the others' lines"
# A far ferry killed: said, exit 24 (a helper that kills itself).
printf '#!/bin/sh\nkill -KILL $$\n' > "$T/killed-helper"
chmod +x "$T/killed-helper"
rc=0
within 60 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" digest --remote-helper="$T/killed-helper" \
    "testhost:$T/a.img" > "$T/out" 2> "$T/err" || rc=$?
assert_ferry_error 24 "$rc" "$T/err" "the remote ferry was killed by SIGKILL (the digest of testhost:$T/a.img)"
assert_eq "" "$(cat "$T/out")" "a killed remote digest: no digest line"

# A local SRC that is missing: nothing is left on the host (its ferries
# create DST before this one opens SRC, and remove it when no stream came,
# as they end, after this one: once, with CI beside it, later than 5 s).
for streams in 1 4; do
    rc=0
    copy --streams=$streams "$T/none.img" "testhost:$T/far/never.img" 2> "$T/err" || rc=$?
    assert_ferry_error 3 "$rc" "$T/err" "cannot open $T/none.img: No such file or directory"
    wait_until 30 eval "[ ! -e '$T/far/never.img' ]"
done
# Nor a SRC that cannot be read (a directory).
rc=0
copy "$T/here" "testhost:$T/far/never.img" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "cannot open $T/here: Is a directory"
wait_until 30 eval "[ ! -e '$T/far/never.img' ]"
# Into DIR/ that is missing: the name that DST took, as typed.
fails_in_one_line "an upload into a missing DIR/" \
    "cannot open testhost:$T/far/nodir/a.img: No such file or directory" \
    "$T/a.img" "testhost:$T/far/nodir/"

# A far host without qemu-nbd: its ferry says so, naming the host.
mkdir "$T/empty-bin"
start_sshd bare "$T/empty-bin"
ssh_host_alias barehost
qemu-img create -q -f qcow2 "$T/far/disk.qcow2" 64M
fails_in_one_line "a qcow2 SRC on a host without qemu-nbd" \
    "barehost:$T/far/disk.qcow2 is qcow2: serving it needs qemu-nbd, which is not installed on $(hostname) (Debian package qemu-utils)" \
    "barehost:$T/far/disk.qcow2" "$T/disk.img"

# A server that allows fewer sessions on a connection than --streams: its
# refusal names the likely cause.
start_sshd few /usr/bin:/bin "MaxSessions 2"
ssh_host_alias fewhost
rc=0
copy --streams=4 "$T/a.img" "fewhost:$T/far/few.img" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "cannot open a session channel: "
assert_contains "$T/err" "(it opened 2 on the session before; the server's MaxSessions, 10 by default in sshd, may be below --streams=4)" \
    "MaxSessions: the hint"
