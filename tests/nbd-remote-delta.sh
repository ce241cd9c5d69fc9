#!/usr/bin/env bash
# --delta over --streams=4, each way: 1 GiB of nbdkit sparse-random (10%
# data) copied into nbdkit memory, then 1% of the copy's 64 KiB blocks
# overwritten at random (qemu-io); a re-sync with --delta sends only those
# blocks (the -v counts of the copy: blocks compared and sent, bytes
# saved, DATA bytes) and makes the copy identical (qemu-img compare, the composed
# digest); once identical, a re-sync sends nothing, and --progress counts
# the whole image as same, with the remote ferries' lines below it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need qemu-io
start_sshd main /usr/bin:/bin
serve src sparse-random size=1G seed=32 percent=10
serve dst memory size=1G
B=65536 changed=164

# Overwrite $changed random blocks of URI, each with a byte of its own.
scribble () {  # URI SEED
    local commands
    mapfile -t commands < <(python3 -c "
import random
random.seed($2)
for i, b in enumerate(random.sample(range(16384), $changed)):
    print('-c'); print('write -q -P %d %d $B' % (i % 255 + 1, b * $B))")
    qemu-io -f raw "${commands[@]}" "$1" || fail "qemu-io"
}

# FIELD of the copy's -v line 'ferry: delta: ...' in $T/remote.err.
delta_field () {  # FIELD
    sed -n "s/^ferry: delta: .*$1=\([0-9]*\).*/\1/p" "$T/remote.err"
}

check_resync () {  # WAY SRC DST SENT
    local way=$1 src=$2 dst=$3 sent=$4 data
    assert_eq 0 "$REMOTE_RC" "$way: exit code"
    within 300 qemu-img compare -f raw -F raw "$src" "$dst" >&2 || fail "$way: the copy differs"
    assert_eq "$("$FERRY" --nbd-digest="$src" | cut -d' ' -f1)" \
        "$(grep '^ferry: copy: ' "$T/remote.err" | summary_field /dev/stdin digest)" \
        "$way: the composed digest"
    assert_eq 16384 "$(delta_field compared)" "$way: blocks compared"
    assert_eq "$sent" "$(delta_field sent)" "$way: blocks sent"
    assert_eq $(((16384 - sent) * B)) "$(delta_field saved)" "$way: bytes saved"
    data=$(grep '^ferry: copy: ' "$T/remote.err" | summary_field /dev/stdin data)
    [ "$data" -le $((sent * B)) ] || fail "$way: $data data bytes for $sent blocks"
}

remote_copy up "$(uri src)" "$(uri dst)" --streams=4
assert_eq 0 "$REMOTE_RC" "first copy: exit code"
scribble "$(uri dst)" 7
remote_copy up "$(uri src)" "$(uri dst)" --streams=4 --delta -v
check_resync up "$(uri src)" "$(uri dst)" $changed
# A remote line while the progress line is drawn: a helper that says one
# a moment in (the remote halves of a ranged copy print no summary).
cat > "$T/saying-helper" <<HELPER
#!/bin/sh
{ sleep 0.2; echo "ferry: a remote line" >&2; } &
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/saying-helper"
REMOTE_HELPER=$T/saying-helper remote_copy up "$(uri src)" "$(uri dst)" --streams=4 --delta -v \
    --progress=always
check_resync "up, identical" "$(uri src)" "$(uri dst)" 0
# --progress's last line: every block was SAME, none data or zero.
line=$(tr '\r' '\n' < "$T/remote.err" | grep -a ' image ' | tail -1)
case $line in
*"  data 0 B "*"  zero 0 B "*"  same 1.00 GiB "*) ;;
*) fail "up, identical: progress line: $line" ;;
esac
# The remote lines came while the progress line was drawn: each erases
# that line first ("\r", blanks, "\r"), not appended to it.
python3 - "$T/remote.err" <<'PY' || fail "up, identical: a remote line drawn into the progress line"
import re, sys
lines = open(sys.argv[1], "rb").read().decode(errors="replace").split("\n")
remote = [l for l in lines if "a remote line" in l]
sys.exit(not remote or any(not re.search(r"(^|\r *\r)$", l[:l.find("ferry: ")]) for l in remote))
PY

# Download: the local receiver computes its DEST's digests, the remote
# sender compares.
serve back memory size=1G
remote_copy down "$(uri src)" "$(uri back)" --streams=4
assert_eq 0 "$REMOTE_RC" "first download: exit code"
scribble "$(uri back)" 8
remote_copy down "$(uri src)" "$(uri back)" --streams=4 --delta -v
check_resync down "$(uri src)" "$(uri back)" $changed
