#!/usr/bin/env bash
# ferry copy of raw files on this host, as cp --sparse=always and nbdcopy
# would: 1 GiB with about 10% data into a DST that does not exist (the
# bytes equal, the SEEK_DATA map equal, the digest equal to python3's);
# at most 16 MiB of DST left in the page cache (written behind, as
# nbdcopy does), no fallocate for the zeros of a new DST; a DST smaller and one larger (each ends with SRC's size), a directory
# (DST/basename(SRC)), the same file (refused, also through a hard link),
# a missing SRC, a missing DST directory and a DST/ that is no directory
# (one line, exit 3, nothing created or changed); a loop device as SRC and as DST; ferry digest of a file, a
# device and an NBD URI, equal to the reference; a symlink to a missing
# file as DST; USER@:PATH refused; '[ CMD ]' as SRC and as DST.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
M=$((1024 * 1024))
# 1 GiB with about 10% data in the plain build; a quarter of it in the
# deferred-unref and sanitizer builds (.ci/run's time).
mib=1024 blocks=410
[ -n "${FERRY_TEST_PLAIN:-}" ] || mib=256 blocks=102
sparse_image "$T/a.img" $mib $blocks
SIZE=$(stat -c %s "$T/a.img")
want=$(python3 "$CHECK" digest "$T/a.img" "$SIZE")

copy_ok () {  # SRC... DST... WHAT: the last argument says what it is
    local what=${*: -1}
    within 120 "$FERRY" copy "${@:1:$#-1}" 2> "$T/err" || fail "$what: $(cat "$T/err")"
    [ ! -s "$T/err" ] || fail "$what: ferry said: $(cat "$T/err")"
}
copy_fails () {  # CODE MESSAGE SRC DST: one line, the code
    local code=$1 message=$2 rc=0; shift 2
    within 60 "$FERRY" copy "$@" 2> "$T/err" || rc=$?
    assert_eq "$code" "$rc" "exit code of ferry copy $*"
    assert_eq "ferry: $message" "$(cat "$T/err")" "message of ferry copy $*"
}

# Into a new DST.
copy_ok "$T/a.img" "$T/b.img" "into a new DST"
# Written behind: the copy leaves at most its write-behind window (8 MiB)
# of DST in the page cache, not the whole of its data.  tmpfs keeps it all.
if [ "$(stat -f -c %T "$T")" != tmpfs ] && command -v fincore > /dev/null; then
    cached=$(fincore --bytes --noheadings --output RES "$T/b.img")
    [ "$cached" -le $((16 * M)) ] || fail "the copy left $cached bytes of DST in the page cache"
fi
# A new DST reads as zeros already: its zero records cost no fallocate.
if command -v strace > /dev/null; then
    rm -f "$T/b.img"
    within 120 env "${STRACE_ENV[@]}" strace -f -qq -e trace=fallocate -o "$T/strace" "$FERRY" copy "$T/a.img" "$T/b.img" 2> "$T/err" ||
        fail "under strace: $(cat "$T/err")"
    assert_eq 0 "$(grep -c fallocate "$T/strace")" "fallocate calls into a new DST"
    cmp "$T/a.img" "$T/b.img" || fail "the copy under strace differs"
    assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/b.img")" "the SEEK_DATA map of the copy under strace"
fi
cmp "$T/a.img" "$T/b.img" || fail "the copy differs"
# Some random blocks touch and make one extent; most stand alone.
[ "$(data_map "$T/a.img" | wc -l)" -gt $((blocks / 2)) ] || fail "the image has too few data extents"
assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/b.img")" "the copy's SEEK_DATA map"
assert_eq "$want  $T/b.img" "$("$FERRY" digest "$T/b.img")" "ferry digest of the copy"

# Into a smaller DST (grown) and a larger one (truncated), holding data.
head -c $((3 * M)) /dev/urandom > "$T/small.img"
copy_ok "$T/a.img" "$T/small.img" "into a smaller DST"
cmp "$T/a.img" "$T/small.img" || fail "the copy into a smaller DST differs"
truncate -s $((2 * SIZE)) "$T/large.img"
head -c $M /dev/urandom | dd of="$T/large.img" bs=1M seek=$((SIZE / M + 10)) conv=notrunc status=none
head -c $M /dev/urandom | dd of="$T/large.img" bs=1M seek=1 conv=notrunc status=none
copy_ok "$T/a.img" "$T/large.img" "into a larger DST"
assert_eq "$SIZE" "$(stat -c %s "$T/large.img")" "the larger DST's size after the copy"
cmp "$T/a.img" "$T/large.img" || fail "the copy into a larger DST differs"

# A directory: DST/basename(SRC).
mkdir "$T/dir"
copy_ok "$T/a.img" "$T/dir" "into a directory"
cmp "$T/a.img" "$T/dir/a.img" || fail "the copy into a directory differs"

# Refused: the same file (a hard link; SRC's own directory), a missing SRC, a missing DST directory.
ln "$T/b.img" "$T/b-link.img"
copy_fails 2 "$T/b.img and $T/b-link.img are the same file" "$T/b.img" "$T/b-link.img"
copy_fails 2 "$T/a.img and $T/a.img are the same file" "$T/a.img" "$T"
copy_fails 3 "cannot open $T/none.img: No such file or directory" "$T/none.img" "$T/c.img"
[ ! -e "$T/c.img" ] || fail "a DST was created for a missing SRC"
copy_fails 3 "cannot open $T/nodir/c.img: No such file or directory" "$T/a.img" "$T/nodir/c.img"
# DST/ names a directory, as for cp: SRC's own name with a '/', or one not
# there, raw or qcow2 (which qemu-img would create at the name without it).
cp --sparse=always "$T/b.img" "$T/b-before.img"
for format in raw qcow2; do
    copy_fails 3 "cannot open $T/b.img/: Not a directory" --dst-format=$format "$T/b.img" "$T/b.img/"
    copy_fails 3 "cannot open $T/newdir/: Not a directory" --dst-format=$format "$T/b.img" "$T/newdir/"
done
cmp "$T/b.img" "$T/b-before.img" || fail "a copy into SRC/ changed SRC"
# An option out of its range: a usage error, before anything is opened.
copy_fails 2 "invalid --request-size '4096': expected 65536 to 67108864 bytes; see 'ferry copy --help'" \
    --request-size=4096 "$T/a.img" "$T/c.img"
[ ! -e "$T/c.img" ] || fail "a refused copy created DST"
[ ! -e "$T/newdir" ] || fail "a copy into a missing DST/ created it"

# ferry digest: a file, an NBD URI, one line each, as sha256sum.
serve a -r file "$T/a.img"
assert_eq "$want  $T/a.img
$want  $(uri a)" "$("$FERRY" digest "$T/a.img" "$(uri a)")" "ferry digest of a file and a URI"
rc=0
"$FERRY" digest "$T/none.img" "$T/a.img" > "$T/out" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "ferry digest with a missing image: the first failure's code"
assert_eq "$want  $T/a.img" "$(cat "$T/out")" "ferry digest goes on past a missing image"

# '--' ends the options, also before names that start with '-' (which
# glib leaves it in front of).
cp --sparse=always "$T/b-before.img" "$T/-dash.img"
(cd "$T" && copy_ok -- -dash.img -out.img "names that start with '-'")
cmp "$T/-dash.img" "$T/-out.img" || fail "the copy of -dash.img differs"
assert_eq "$(python3 "$CHECK" digest "$T/-dash.img" "$(stat -c %s "$T/-dash.img")")  -dash.img" \
    "$(cd "$T" && "$FERRY" digest -- -dash.img)" "ferry digest -- -dash.img"
# A name with a newline, a backslash or a carriage return: escaped as
# sha256sum escapes it.
odd="$T/n"$'\n'"l\\b"$'\r'".img"
cp --sparse=always "$T/-dash.img" "$odd"
assert_eq "\\$(python3 "$CHECK" digest "$odd" "$(stat -c %s "$odd")")  $T/n\\nl\\\\b\\r.img" \
    "$("$FERRY" digest "$odd")" "ferry digest of a name with a newline and a backslash"

# A DST that is a symlink to a file yet to be made: made, as cp makes it.
ln -s "$T/made.img" "$T/link.img"
copy_ok "$T/a.img" "$T/link.img" "into a symlink to a missing file"
cmp "$T/a.img" "$T/made.img" || fail "the copy through a symlink differs"
# USER@:PATH is scp's remote form with no host: refused, not a local file.
copy_fails 2 "invalid address 'ssh://u@': empty host" "$T/a.img" "u@:x.img"
[ ! -e "u@:x.img" ] || fail "u@:x.img became a local file"

# '[ CMD ]' on either side serves that side alone.
rm -f "$T/from-cmd.img"
copy_ok '[' nbdkit -r file "$T/a.img" ']' "$T/from-cmd.img" "from '[ CMD ]'"
cmp "$T/a.img" "$T/from-cmd.img" || fail "the copy from '[ CMD ]' differs"
truncate -s "$SIZE" "$T/to-cmd.img"
copy_ok "$T/a.img" '[' nbdkit file "$T/to-cmd.img" ']' "into '[ CMD ]'"
cmp "$T/a.img" "$T/to-cmd.img" || fail "the copy into '[ CMD ]' differs"

# A loop device as DST, then as SRC, and its digest.
if command -v losetup > /dev/null && [ -e /dev/loop-control ] &&
       head -c $((64 * M)) /dev/urandom > "$T/dev.img" &&
       dev=$(losetup -f --show "$T/dev.img" 2>/dev/null); then
    cleanup_fn losetup -d "$dev"
    sparse_image "$T/small-src.img" 64 26
    copy_ok "$T/small-src.img" "$dev" "into a loop device"
    cmp "$T/small-src.img" "$dev" || fail "the copy into $dev differs"
    rm -f "$T/back.img"
    copy_ok "$dev" "$T/back.img" "out of a loop device"
    cmp "$T/small-src.img" "$T/back.img" || fail "the copy out of $dev differs"
    assert_eq "$(python3 "$CHECK" digest "$T/small-src.img" $((64 * M)))  $dev" \
        "$("$FERRY" digest "$dev")" "ferry digest of $dev"
    copy_fails 23 "$dev is 67108864 bytes, smaller than the stream's image of $SIZE bytes" \
        "$T/a.img" "$dev"
else
    echo "no loop device here (losetup or /dev/loop-control missing, or no free device): skipped that part" >&2
fi
