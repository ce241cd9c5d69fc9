#!/usr/bin/env bash
# ferry copy on this host with --streams and --delta: the remote copy's
# ranged streams, with its receivers run here as processes, no ssh.
# --streams=4 into a new DST (the bytes, the holes and the digest equal to
# python3's); --delta into it after 1% of SRC's blocks changed (exactly
# those blocks sent); --delta into a DST that does not exist; a missing
# SRC and a missing DST directory (one line, exit 3, nothing created),
# --no-verify, a qcow2 DST and '[ CMD ]' (usage errors); a
# receiving half killed (its line, exit 24); SIGTERM (exit 143, how far
# DST is complete); a loop device as DST (--delta into it, and one too
# small: 23).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3
M=$((1024 * 1024))
sparse_image "$T/a.img" 256 256
SIZE=$(stat -c %s "$T/a.img")

copy_ok () {  # OPTIONS... SRC DST WHAT: -v's lines in $T/err
    local what=${*: -1}
    within 120 "$FERRY" copy -v "${@:1:$#-1}" 2> "$T/err" || fail "$what: $(cat "$T/err")"
    cat "$T/err" >&2
}
copy_fails () {  # CODE MESSAGE OPTIONS... SRC DST: one line, the code
    local code=$1 message=$2 rc=0; shift 2
    within 60 "$FERRY" copy "$@" 2> "$T/err" || rc=$?
    assert_eq "$code" "$rc" "exit code of ferry copy $*"
    assert_eq "ferry: $message" "$(cat "$T/err")" "message of ferry copy $*"
}

# --streams=4 into a new DST.
copy_ok --streams=4 "$T/a.img" "$T/b.img" "--streams=4 into a new DST"
cmp "$T/a.img" "$T/b.img" || fail "the --streams=4 copy differs"
assert_eq "$(data_map "$T/a.img")" "$(data_map "$T/b.img")" "the data map of the --streams=4 copy"
want=$(python3 "$CHECK" digest "$T/a.img" "$SIZE")
assert_eq "$want" "$(summary_field "$T/err" digest)" "the --streams=4 copy's digest"
assert_contains "$T/err" "copy: streams=4 " "the -v summary of four streams"

# --delta after 1% of SRC's 64 KiB blocks changed: those blocks alone go.
blocks=$((SIZE / 65536)) changed=$((SIZE / 65536 / 100))
python3 - "$T/a.img" "$changed" <<'PY'
import os, random, sys
random.seed(5)
with open(sys.argv[1], 'r+b') as f:
    for b in random.sample(range(os.fstat(f.fileno()).st_size // 65536), int(sys.argv[2])):
        f.seek(b * 65536)
        f.write(os.urandom(65536))
PY
copy_ok --delta "$T/a.img" "$T/b.img" "--delta into the old copy"
cmp "$T/a.img" "$T/b.img" || fail "the --delta copy differs"
assert_contains "$T/err" "delta: compared=$blocks blocks, sent=$changed same=$((blocks - changed)) " \
    "--delta sent exactly the changed blocks"
copy_ok --delta --streams=2 "$T/a.img" "$T/new.img" "--delta into a DST that does not exist"
cmp "$T/a.img" "$T/new.img" || fail "the --delta copy into a new DST differs"

# Refused: a missing SRC, a missing DST directory, --no-verify with streams.
copy_fails 3 "cannot open $T/none.img: No such file or directory" --streams=4 "$T/none.img" "$T/c.img"
[ ! -e "$T/c.img" ] || fail "a DST was created for a missing SRC"
copy_fails 3 "cannot open $T/nodir/c.img: No such file or directory" --delta "$T/a.img" "$T/nodir/c.img"
copy_fails 2 "--no-verify goes with --streams=1: the ranges of more streams are checked by their digests" \
    --streams=4 --no-verify "$T/a.img" "$T/c.img"

copy_fails 2 "--delta takes --streams of 2 or more and no --no-verify: its ranged streams carry DST's digests; see 'ferry copy --help'" \
    --delta --streams=1 "$T/a.img" "$T/c.img"
copy_fails 2 "--delta writes only a raw DST, not --dst-format=qcow2" --delta --dst-format=qcow2 \
    "$T/a.img" "$T/c.qcow2"
# '[ CMD ]' as DST serves one receiver, not N.
copy_fails 2 "with --streams or --delta, DST is a path or an NBD URI, not '[ CMD ARGS... ]'" \
    --delta "$T/a.img" '[' nbdkit file "$T/b.img" ']'

# A receiving half killed: its line, exit 24.  A DST behind nbdkit's rate
# filter keeps the copy running; small requests let it drain in time.
small="--request-size=64K --in-flight=256K"
truncate -s "$SIZE" "$T/slow.img"
serve_slow () { serve slow --filter=rate file "$T/slow.img" rate=512K; slow_pid=$LAST_PID; }
serve_slow
far () { pgrep -f -- "--nbd-receive=nbd\+unix" | head -1; }
"$FERRY" copy --streams=2 $small "$T/a.img" "$(uri slow)" 2> "$T/killed.err" &
copy=$!
track $copy
wait_until 30 far || fail "no receiving half ran"
sleep 1
kill -KILL "$(far)"
wait_rc 30 $copy
cat "$T/killed.err" >&2
assert_eq 24 "$rc" "exit code after a receiving half was killed"
assert_contains "$T/killed.err" "): the receiving half was killed by SIGKILL (ran: " \
    "the line of the killed receiving half"

# SIGTERM: every half stops and says how far; exit 143.
serve_again_if_dead slow "$slow_pid" serve_slow
"$FERRY" copy --streams=2 $small "$T/a.img" "$(uri slow)" 2> "$T/stopped.err" &
copy=$!
track $copy
wait_until 30 far || fail "no receiving half ran"
sleep 1
stop_copy $copy "$T/stopped.err" 20
# A receiving half hears of the stop from the signal or from its sender's
# STOP record, whichever comes first.
assert_eq 2 "$(grep -cE "^ferry: (the sender was )?stopped by SIGTERM; in the range at offset .* is complete up to offset .* \(flushed\)$" "$T/stopped.err")" \
    "the stopped receiving halves' lines"
if grep -q "drain-timeout" "$T/stopped.err"; then fail "the stopped copy did not drain"; fi

# A loop device as DST: --delta into it, and one too small (23, as without
# --streams).
if command -v losetup > /dev/null && [ -e /dev/loop-control ] &&
       head -c $((64 * M)) /dev/zero > "$T/dev.img" &&
       dev=$(losetup -f --show "$T/dev.img" 2>/dev/null); then
    cleanup_fn losetup -d "$dev"
    sparse_image "$T/small-src.img" 64 26
    copy_ok --streams=3 "$T/small-src.img" "$dev" "--streams=3 into a loop device"
    cmp "$T/small-src.img" "$dev" || fail "the --streams=3 copy into $dev differs"
    head -c 65536 /dev/urandom | dd of="$T/small-src.img" bs=64K seek=5 conv=notrunc status=none
    copy_ok --delta "$T/small-src.img" "$dev" "--delta into a loop device"
    cmp "$T/small-src.img" "$dev" || fail "the --delta copy into $dev differs"
    assert_contains "$T/err" "delta: compared=1024 blocks, sent=1 same=1023 " \
        "--delta into $dev sent the one changed block"
    copy_fails 23 "$dev is 67108864 bytes, smaller than the stream's image of $SIZE bytes" \
        --streams=2 "$T/a.img" "$dev"
else
    echo "no loop device here (losetup or /dev/loop-control missing, or no free device): skipped that part" >&2
fi
