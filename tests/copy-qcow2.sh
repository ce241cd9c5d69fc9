#!/usr/bin/env bash
# ferry copy with qcow2 at either end, served by qemu-nbd that ferry starts
# itself: a qcow2 SRC found by its header, a missing qcow2 DST created at
# SRC's size (an NBD export's: the stream's; an empty SRC's, 0; a stop while its header is
# awaited or DST created, or a stream cut before it, is one line), its holes unallocated
# clusters; qcow2 to raw and raw to qcow2, holes kept; a qcow2 with a
# backing file as SRC (and its backing file as DST: refused); ferry digest of a qcow2 equal to python3's over the
# raw bytes; and qemu-nbd missing from PATH: one line that names the
# program, the host and the Debian package, exit 3; qemu-img missing for a
# new qcow2 DST, the same; an image that qemu cannot open (a missing
# backing file, a lock held by a writer or a reader): one line with qemu's
# reason; a qemu-nbd that cannot run; a stop while qemu-nbd serves SRC,
# also sent to ferry's process group (qemu-nbd has its own): one line, 128
# + the signal; qemu-nbd gone with a SIGKILLed ferry; and a qcow2 SRC named
# raw: its file's bytes, never probed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-nbd qemu-io
M=$((1024 * 1024))
qemu-img create -q -f qcow2 "$T/base.qcow2" 256M
qemu-io -f qcow2 -c 'write -P 0x33 10M 5M' -c 'write -P 0x44 255M 1M' "$T/base.qcow2" > /dev/null

allocated () {  # QCOW2: bytes that hold data
    qemu-img map --output=json "$1" | python3 -c '
import json, sys; print(sum(e["length"] for e in json.load(sys.stdin) if e["data"]))'
}
raw_digest () {  # IMAGE: python3's digest of its bytes, converted by qemu-img
    rm -f "$T/ref.raw"
    qemu-img convert -O raw "$1" "$T/ref.raw"
    python3 "$CHECK" digest "$T/ref.raw" "$(stat -c %s "$T/ref.raw")"
}

# A new qcow2 DST: created, the same bytes, the same size, holes kept.
within 60 "$FERRY" copy -v --dst-format=qcow2 "$T/base.qcow2" "$T/copy.qcow2" 2> "$T/err" ||
    fail "qcow2 -> new qcow2: $(cat "$T/err")"
qemu-img compare "$T/base.qcow2" "$T/copy.qcow2" >&2 || fail "the qcow2 copy differs"
assert_eq "qcow2 $((256 * M))" "$(format_and_size "$T/copy.qcow2")" \
    "the new DST's format and size"
assert_eq $((6 * M)) "$(allocated "$T/copy.qcow2")" "allocated bytes in the new qcow2"
assert_eq $((6 * M)) "$(summary_field "$T/err" data)" "data bytes sent"
# An empty SRC makes an empty qcow2, as qemu-img convert does.
: > "$T/empty.img"
within 60 "$FERRY" copy --dst-format=qcow2 "$T/empty.img" "$T/empty.qcow2" 2> "$T/err" ||
    fail "empty -> new qcow2: $(cat "$T/err")"
assert_eq "qcow2 0" "$(format_and_size "$T/empty.qcow2")" "the new empty DST's format and size"

# A qcow2 with a backing file: the guest's view, backing and overlay.
qemu-img create -q -f qcow2 -b "$T/base.qcow2" -F qcow2 "$T/overlay.qcow2"
qemu-io -f qcow2 -c 'write -P 0x55 12M 1M' -c 'write -P 0x66 100M 2M' "$T/overlay.qcow2" > /dev/null
within 60 "$FERRY" copy --dst-format=qcow2 "$T/overlay.qcow2" "$T/flat.qcow2" ||
    fail "qcow2 with a backing file -> qcow2"
qemu-img compare "$T/overlay.qcow2" "$T/flat.qcow2" >&2 || fail "the overlay's copy differs"
[ "$(qemu-img info --output=json "$T/flat.qcow2" | grep -c backing-filename)" = 0 ] ||
    fail "the copy has a backing file"
# A DST that is SRC's backing file (raw, so qemu's lock would not stop
# it), named by a relative path from a directory whose name is not ASCII:
# refused, as the same file is, and left as it was.
mkdir "$T/jö rg"
qemu-img create -q -f qcow2 "$T/jö rg/back.qcow2" 1M
qemu-img create -q -f qcow2 -b back.qcow2 -F qcow2 "$T/jö rg/top.qcow2"
cp "$T/jö rg/back.qcow2" "$T/back-before.qcow2"
rc=0
(cd "$T/jö rg" && within 60 "$FERRY" copy top.qcow2 back.qcow2) 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "a copy into SRC's backing file: exit code"
assert_eq "ferry: back.qcow2 is a backing file of top.qcow2: the copy would change its own source" \
    "$(cat "$T/err")" "a copy into SRC's backing file: the line"
cmp "$T/jö rg/back.qcow2" "$T/back-before.qcow2" || fail "a copy into SRC's backing file changed it"

# qcow2 -> a new raw file: the guest's bytes, its holes kept as holes.
within 60 "$FERRY" copy "$T/base.qcow2" "$T/base.img" || fail "qcow2 -> raw"
qemu-img compare -f qcow2 -F raw "$T/base.qcow2" "$T/base.img" >&2 || fail "the raw copy differs"
assert_eq "$((10 * M)) $((15 * M))
$((255 * M)) $((256 * M))" "$(data_map "$T/base.img")" "the raw copy's SEEK_DATA map"

# raw -> a new qcow2: its holes stay unallocated clusters.
rm -f "$T/back.qcow2"
within 60 "$FERRY" copy --dst-format=qcow2 "$T/base.img" "$T/back.qcow2" || fail "raw -> qcow2"
qemu-img compare -f raw -F qcow2 "$T/base.img" "$T/back.qcow2" >&2 || fail "the qcow2 copy of raw differs"
assert_eq $((6 * M)) "$(allocated "$T/back.qcow2")" "allocated bytes in the qcow2 copy of raw"

# An NBD export into a new qcow2: created at the size that the stream's
# header gives (ferry copy cannot tell an export's size up front).
within 60 "$FERRY" copy --dst-format=qcow2 '[' nbdkit -r file "$T/base.img" ']' "$T/from-nbd.qcow2" ||
    fail "an NBD export -> a new qcow2"
qemu-img compare -f raw -F qcow2 "$T/base.img" "$T/from-nbd.qcow2" >&2 ||
    fail "the qcow2 copy of an NBD export differs"
assert_eq "qcow2 $((256 * M))" "$(format_and_size "$T/from-nbd.qcow2")" \
    "an NBD export -> a new qcow2: the format and size"

# SIGTERM to PID once CMD succeeds, and wait up to SECS for its exit code,
# in $rc.
stop_when () {  # SECS PID CMD...
    local secs=$1 pid=$2
    shift 2
    wait_until 10 "$@"
    kill -TERM "$pid"
    rc=0
    wait_exit "$secs" "$pid" || rc=$?
}

# A stop while a receiver into a new qcow2 waits for the stream's header:
# one line, 128 + the signal, no DST made.
silent_fifo quiet
"$FERRY" --dst-format=qcow2 --nbd-receive="$T/never.qcow2" < "$T/quiet" 2> "$T/err" & track $!
stop_when 10 $! catches_signals $!
assert_eq 143 "$rc" "a stop while waiting for the header: exit code"
assert_eq "ferry: stopped by SIGTERM while waiting for the stream's header" "$(cat "$T/err")" \
    "a stop while waiting for the header: the line"
[ ! -e "$T/never.qcow2" ] || fail "a stop while waiting for the header: DST was made"
# A stop just after the header, while qemu-img creates DST (slowed by a
# wrapper): ferry ends at once, with its line and 128 + the signal.
"$FERRY" --nbd-send="$T/base.img" > "$T/stream"
mkdir "$T/slow-bin"
cat > "$T/slow-bin/qemu-img" <<SLOW
#!/bin/sh
touch "$T/creating"
sleep 1
exec $(command -v qemu-img) "\$@"
SLOW
chmod +x "$T/slow-bin/qemu-img"
PATH="$T/slow-bin:$PATH" "$FERRY" --dst-format=qcow2 --nbd-receive="$T/late.qcow2" \
    < "$T/stream" 2> "$T/err" & track $!
stop_when 20 $! test -e "$T/creating"
assert_eq 143 "$rc" "a stop while DST is created: exit code"
assert_eq "ferry: stopped by SIGTERM while opening $T/late.qcow2" "$(cat "$T/err")" \
    "a stop while DST is created: the line"
# A stream that ends before its header: the receiver's line, exit 21, no DST.
rc=0
printf abc | "$FERRY" --dst-format=qcow2 --nbd-receive="$T/never.qcow2" 2> "$T/err" || rc=$?
assert_eq 21 "$rc" "a stream cut before its header: exit code"
assert_eq "ferry: stream truncated in the stream header (stream byte 0, export offset 0)" \
    "$(cat "$T/err")" "a stream cut before its header: the line"
[ ! -e "$T/never.qcow2" ] || fail "a stream cut before its header: DST was made"

# ferry digest: one sha256sum-style line per image, as typed.
want=$(raw_digest "$T/overlay.qcow2")
assert_eq "$want  $T/overlay.qcow2
$want  $T/flat.qcow2" "$("$FERRY" digest "$T/overlay.qcow2" "$T/flat.qcow2")" "ferry digest"

# An image qemu cannot open is one line with qemu's reason, exit 3: a
# backing file that is missing (named, not its overlay), and a qcow2 that
# another qemu-nbd holds for writing.
qemu-img create -q -f qcow2 "$T/gone-base.qcow2" 16M
qemu-img create -q -f qcow2 -b "$T/gone-base.qcow2" -F qcow2 "$T/orphan.qcow2"
rm "$T/gone-base.qcow2"
rc=0
within 60 "$FERRY" copy "$T/orphan.qcow2" "$T/x.img" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "exit code for a missing backing file"
assert_eq 1 "$(wc -l < "$T/err")" "one line for a missing backing file"
assert_contains "$T/err" "ferry: cannot open $T/orphan.qcow2: Could not open '$T/gone-base.qcow2'" \
    "the line for a missing backing file"
[ ! -e "$T/x.img" ] || fail "DST was created although SRC could not be opened"
held_dst_fails () {  # DST WHAT LINE: a copy into DST, which another process holds
    rc=0
    within 60 "$FERRY" copy --dst-format=qcow2 "$T/base.img" "$1" 2> "$T/err" || rc=$?
    assert_eq 3 "$rc" "exit code for a DST that $2 holds"
    assert_eq 1 "$(wc -l < "$T/err")" "one line for a DST that $2 holds"
    assert_contains "$T/err" "$3" "the line for a DST that $2 holds"
}
qemu-img create -q -f qcow2 "$T/held.qcow2" 256M
bg qemu-nbd -f qcow2 -k "$T/holder.sock" "$T/held.qcow2"
wait_for_socket "$T/holder.sock"
held_dst_fails "$T/held.qcow2" qemu-nbd \
    "ferry: cannot open $T/held.qcow2: Could not open '$T/held.qcow2': Failed to get shared \"write\" lock"
# One that a reader holds (qemu-io -r shares reading, so that qemu-img's
# check passes): qemu-nbd's own words, captured, are the one line.
qemu-img create -q -f qcow2 "$T/read-held.qcow2" 256M
bg qemu-io -r -f qcow2 -c 'sleep 600000' "$T/read-held.qcow2"
holds_open () { ls -l "/proc/$1/fd" 2> /dev/null | grep -qF "$2"; }
wait_until 10 holds_open "$LAST_PID" "$T/read-held.qcow2"
held_dst_fails "$T/read-held.qcow2" "a reader" \
    "ferry: cannot open $T/read-held.qcow2: Failed to blk_new_open '$T/read-held.qcow2': Failed to get \"write\" lock"

# Stopped while qemu-nbd serves SRC: the copy's one line and 128 + the
# signal; qemu-nbd's complaints about its client gone are not shown, and
# a stop sent to ferry's whole process group (as a shell's job control
# does) does not reach qemu-nbd, which would cut the copy off.
head -c $((512 * M)) /dev/zero | tr '\0' U > "$T/full.img"
qemu-img convert -f raw -O qcow2 "$T/full.img" "$T/full.qcow2"
rm "$T/full.img"
serving_full () { pgrep -f "qemu-nbd.*$T/full.qcow2" > /dev/null; }
for sig in TERM INT; do
    rm -f "$T/stopped.img"
    setsid env --default-signal=INT,QUIT "$FERRY" copy "$T/full.qcow2" "$T/stopped.img" 2> "$T/err" & track $!
    pid=$!
    wait_until 20 serving_full
    server=$(pgrep -f "qemu-nbd.*$T/full.qcow2")
    assert_eq "$server" "$(ps -o pgid= -p "$server" | tr -d ' ')" "qemu-nbd's process group"
    sleep 0.1
    kill -$sig -- -$pid
    rc=0
    wait_exit 20 $pid || rc=$?
    if [ "$rc" != 0 ]; then
        assert_eq $((128 + $(kill -l $sig))) "$rc" "SIG$sig to the group while qemu-nbd serves: exit code"
        assert_eq 1 "$(wc -l < "$T/err")" "SIG$sig to the group while qemu-nbd serves: one line ($(cat "$T/err"))"
        assert_contains "$T/err" "ferry: stopped by SIG$sig" "SIG$sig to the group while qemu-nbd serves: the line"
    else
        echo "SIG$sig came after the copy's end" >&2
    fi
done
# And when ferry is killed, its qemu-nbd goes too.
"$FERRY" digest "$T/full.qcow2" > /dev/null 2>&1 & track $!
pid=$!
wait_until 20 serving_full
kill -KILL $pid
wait_until 5 eval '! serving_full'

# A qemu-nbd that cannot be run: one line that says why, exit 3.
mkdir "$T/broken-bin"
printf '#!/nonexistent/sh\n' > "$T/broken-bin/qemu-nbd"
chmod +x "$T/broken-bin/qemu-nbd"
rc=0
env PATH="$T/broken-bin:$PATH" "$FERRY" copy "$T/base.qcow2" "$T/x.img" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "exit code for a qemu-nbd that cannot run"
assert_eq "ferry: cannot run $T/broken-bin/qemu-nbd for $T/base.qcow2: No such file or directory" \
    "$(cat "$T/err")" "the line for a qemu-nbd that cannot run"

# No qemu-nbd on PATH.
mkdir "$T/bin"
rc=0
env PATH="$T/bin" "$FERRY" copy "$T/base.qcow2" "$T/x.img" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "exit code without qemu-nbd"
assert_eq "ferry: $T/base.qcow2 is qcow2: serving it needs qemu-nbd, which is not installed on $(hostname) (Debian package qemu-utils)" \
    "$(cat "$T/err")" "the message without qemu-nbd"
[ ! -e "$T/x.img" ] || fail "DST was created although SRC could not be read"

# qemu-nbd but no qemu-img, for a new qcow2 DST: the same kind of line.
ln -s "$(command -v qemu-nbd)" "$T/bin/qemu-nbd"
rc=0
env PATH="$T/bin" "$FERRY" copy --dst-format=qcow2 "$T/base.img" "$T/y.qcow2" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "exit code without qemu-img"
assert_eq 1 "$(wc -l < "$T/err")" "one line without qemu-img"
assert_contains "$T/err" "qemu-img, which is not installed on $(hostname) (Debian package qemu-utils)" \
    "the message without qemu-img"
[ ! -e "$T/y.qcow2" ] || fail "a qcow2 DST was made without qemu-img"

# A qcow2 named raw is copied as the bytes of its file: no probe, no qemu-nbd.
within 60 env PATH="$T/bin" "$FERRY" copy --src-format=raw "$T/base.qcow2" "$T/as-raw.img" ||
    fail "a qcow2 SRC named raw"
cmp "$T/base.qcow2" "$T/as-raw.img" || fail "a qcow2 SRC named raw: not its file's bytes"
