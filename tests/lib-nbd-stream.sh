# ferry test library for the NBD stream scenarios (nbd-stream-*.sh):
# sourced after lib.sh.  Real peers: nbdkit, qemu-nbd, nbdcopy, qemu-img,
# nbdinfo; the digest is recomputed independently with python3 hashlib.
need nbdkit nbdinfo nbdcopy qemu-img python3
CHECK=$FERRY_SOURCE_ROOT/tests/nbd-stream-check.py

serve () {  # NAME PLUGIN ARGS...: nbdkit on $T/NAME.sock
    local name=$1; shift
    bg nbdkit -f -U "$T/$name.sock" "$@"
    wait_for_socket "$T/$name.sock"
}
uri () { echo "nbd+unix:///?socket=$T/$1.sock"; }

# nbdkit 1.32 itself may abort when its clients are killed mid-reply
# ("raw_send_socket: Assertion `sock >= 0' failed"): if PID is gone, NAME
# is served again by SERVE-FN (which sets the new PID), as a user would
# restart it.
serve_again_if_dead () {  # NAME PID SERVE-FN
    kill -0 "$2" 2> /dev/null && return
    echo "nbdkit's $1 died with its clients; started again" >&2
    rm -f "$T/$1.sock"
    "$3"
}

# An export of zeros whose reads at or past FROM fail with EIO: nbdkit eval,
# so the failure comes on a known read every run (the error filter's rate
# may miss a small export's few requests).
serve_failing_reads () {  # NAME SIZE FROM
    serve "$1" eval get_size="echo $2" \
        pread="if [ \$4 -ge $3 ]; then echo 'EIO read past $3' >&2; exit 1; fi; head -c \$3 /dev/zero"
}

# nbdkit sparse-random as "src", its stream stored in $T/s.stream and its
# bytes in $T/src.raw.
stored_source () {  # SIZE SEED PERCENT
    serve src sparse-random size="$1" seed="$2" percent="$3"
    "$FERRY" --nbd-send="$(uri src)" > "$T/s.stream"
    nbdcopy "$(uri src)" "$T/src.raw"
}

# The digest of an export, computed without ferry: nbdcopy to a sparse
# file, then python3 hashlib.
independent_digest () {  # URI
    local size
    size=$(nbdinfo --size "$1")
    rm -f "$T/digest.raw"
    nbdcopy "$1" "$T/digest.raw"
    python3 "$CHECK" digest "$T/digest.raw" "$size"
    rm -f "$T/digest.raw"
}

# A sparse local image of MIB MiB: COUNT random 256 KiB pieces at random
# 256 KiB-aligned offsets (a fixed sequence), the rest a hole.
sparse_image () {  # PATH MIB COUNT
    local i
    rm -f "$1"
    truncate -s "$2M" "$1"
    RANDOM=7
    for ((i = 0; i < $3; i++)); do
        dd if=/dev/urandom of="$1" bs=256K count=1 seek=$((RANDOM % ($2 * 4))) \
            conv=notrunc status=none
    done
}

data_map () {  # FILE: its data extents, SEEK_DATA/SEEK_HOLE, one "start end" a line
    python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size, pos = os.fstat(fd).st_size, 0
while pos < size:
    try:
        start = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:
        break
    pos = os.lseek(fd, start, os.SEEK_HOLE)
    print(start, pos)' "$1"
}

# KiB allocated to PATH.
allocated_kib () { du -k "$1" | cut -f1; }

format_and_size () {  # IMAGE: "FORMAT VIRTUAL-SIZE", as qemu-img info tells them
    qemu-img info --output=json "$1" |
        python3 -c 'import json, sys; i = json.load(sys.stdin); print(i["format"], i["virtual-size"])'
}

summary_field () {  # FILE KEY: from ferry's -v summary line
    sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | tail -1
}

# ferry --nbd-send=SRC | ferry --nbd-receive=DST (extra receive options
# after the URIs), then every check of the round-trip scenarios: exit codes,
# qemu-img compare, ferry's digests equal the independent one, the
# destination's map has holes where the source's has, and the wire carries
# the data bytes plus at most 1% and 64 KiB.
roundtrip () {  # SRC DST [RECEIVE_OPTIONS...]
    local src=$1 dst=$2 rc_send rc_recv; shift 2
    within 300 "$FERRY" -v --nbd-send="$src" 2> "$T/send.err" |
        within 300 "$FERRY" -v --nbd-receive="$dst" "$@" 2> "$T/recv.err"
    rc_send=${PIPESTATUS[0]} rc_recv=${PIPESTATUS[1]}
    cat "$T/send.err" "$T/recv.err" >&2
    assert_eq 0 "$rc_send" "sender exit code"
    assert_eq 0 "$rc_recv" "receiver exit code"
    check_copy "$src" "$dst"
}

# VAR becomes EXPORT if it is a URI, else (a local file) the URI of a
# read-only nbdkit file server of it: for nbdinfo, which takes no path.
VIEWS=0
nbd_view () {  # VAR EXPORT
    case $2 in
    *://*) printf -v "$1" %s "$2" ;;
    *) VIEWS=$((VIEWS + 1))
       serve "view$VIEWS" -r file "$2"
       printf -v "$1" %s "$(uri "view$VIEWS")" ;;
    esac
}

# The checks of a copy from SRC to DST (URIs or local files) whose
# sender's -v summary is in $T/send.err and the receiver's in $T/recv.err.
check_copy () {  # SRC DST
    local src=$1 dst=$2 src_view dst_view
    nbd_view src_view "$src"
    nbd_view dst_view "$dst"
    within 300 qemu-img compare -f raw -F raw "$src_view" "$dst_view" >&2 ||
        fail "the copy differs"
    local want
    want=$(independent_digest "$src_view")
    assert_eq "$want" "$(summary_field "$T/send.err" digest)" "sender's digest"
    assert_eq "$want" "$(summary_field "$T/recv.err" digest)" "receiver's digest"
    assert_eq "$want  $dst" "$("$FERRY" --nbd-digest="$dst")" "--nbd-digest of the destination"
    nbdinfo --map --json "$src_view" > "$T/map-src.json"
    nbdinfo --map --json "$dst_view" > "$T/map-dst.json"
    python3 "$CHECK" holes "$T/map-src.json" "$T/map-dst.json" >&2 || fail "holes differ"
    local data wire
    data=$(summary_field "$T/send.err" data) wire=$(summary_field "$T/send.err" wire)
    [ "$wire" -le $((data + data / 100 + 65536)) ] ||
        fail "wire bytes $wire > data bytes $data + 1% + 64 KiB"
    assert_eq "$wire" "$(summary_field "$T/recv.err" wire)" "wire bytes read"
}

# For wait_until: PID is ferry (no longer the shell that forked it, which
# catches signals of its own) and has its signal handlers in place (the
# stream modes install them at once, SIGUSR1 last): before that a signal
# would kill it with the default action.
catches_signals () {  # PID
    local mask
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = ferry ] || return 1
    mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
    [ $((0x${mask:-0} & (1 << ($(kill -l USR1) - 1)))) -ne 0 ]
}

# Milliseconds since the epoch, to time a signal's effect.
now_ms () { date +%s%3N; }

# Wait up to SECS for PID to exit (wait_exit) and leave its exit status,
# however bad, in $rc.
wait_rc () {  # SECS PID
    set +e
    wait_exit "$1" "$2"
    rc=$?
    set -e
}

# SIGTERM to PID, a copy whose stderr goes to FILE: it exits 143 within
# SECS (waited for 10 s longer, so that a slow stop shows its lines).
stop_copy () {  # PID FILE SECS
    local start=$SECONDS
    kill -TERM "$1"
    wait_rc $(($3 + 10)) "$1"
    cat "$2" >&2
    assert_eq 143 "$rc" "exit code after SIGTERM"
    [ $((SECONDS - start)) -le "$3" ] || fail "SIGTERM took $((SECONDS - start)) s"
}

# The remote stream mode over the private sshd (lib-sshd.sh, sourced
# first), $REMOTE_HELPER (default: this build's ferry) as the remote half,
# with $REMOTE_PARAMS (e.g. "&known_hosts=FILE") added to the address: up
# copies SRC (local) to DST (on the ssh host), down the other way.  Sets REMOTE_RC; stderr in
# $T/remote.err, and the two halves' -v summaries (the remote one named
# after the host) in $T/send.err and $T/recv.err.  One stream unless
# OPTIONS say --streams=N.  A copy that runs $REMOTE_WITHIN seconds (170,
# inside meson's 180) is killed: a hang then fails with its lines.
remote_copy () {  # up|down SRC DST [OPTIONS...]
    local way=$1 src=$2 dst=$3 args; shift 3
    if [ "$way" = up ]; then
        args=(--nbd-send="$src" --remote-nbd-receive="$dst")
    else
        args=(--nbd-receive="$dst" --remote-nbd-send="$src")
    fi
    REMOTE_RC=0
    # In a subshell, so that remote.err holds ferry's lines only: this shell
    # reports a background job that died of a signal (nbdkit 1.32 may abort
    # when a client goes mid-reply) on its own stderr, at the next command.
    (within "${REMOTE_WITHIN:-170}" env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" \
        --remote-helper="${REMOTE_HELPER:-$FERRY}" "${args[@]}" --streams=1 "$@" \
        "$(ssh_base)?keyfile=$SSH_KEY${REMOTE_PARAMS:-}") 2> "$T/remote.err" || REMOTE_RC=$?
    cat "$T/remote.err" >&2
    grep -F ' send: ' "$T/remote.err" > "$T/send.err" || true
    grep -F ' receive: ' "$T/remote.err" > "$T/recv.err" || true
}

# For the scenarios that interrupt a remote copy: slow exports src and dst
# (100 ms per request; with --request-size=256K --in-flight=256K one
# request at a time), so that the copy is still going a second in, and
# $T/helper, the remote helper, which writes its PID (the remote ferry's:
# it execs it) to $T/remote.pid, and appends it to $T/remote.pids (with
# --streams, one line per remote half).
# dst is a file, so that it keeps its bytes if nbdkit must be started again.
slow_remote_copy_setup () {
    truncate -s 64M "$T/slow-dst.img"
    serve_slow_src
    serve_slow_dst
    cat > "$T/helper" <<HELPER
#!/bin/sh
echo \$\$ > "$T/remote.pid"
echo \$\$ >> "$T/remote.pids"
exec "$FERRY" "\$@"
HELPER
    chmod +x "$T/helper"
}
serve_slow_src () {
    serve src --filter=delay sparse-random size=64M seed=9 percent=50 rdelay=100ms
    slow_src_pid=$LAST_PID
}
serve_slow_dst () {
    serve dst --filter=delay file "$T/slow-dst.img" wdelay=100ms
    slow_dst_pid=$LAST_PID
}
# Before each copy of a scenario that cuts copies short: src and dst are
# served (nbdkit 1.32 may abort once a client killed mid-reply is gone:
# its pending reply comes within the 100 ms delay, hence the wait).
slow_exports_alive () {
    sleep 0.2
    serve_again_if_dead src "$slow_src_pid" serve_slow_src
    serve_again_if_dead dst "$slow_dst_pid" serve_slow_dst
}

# After remote_copy: the copy lost its ssh link within SECS s of START
# (its $SECONDS), with exit 25 and exactly one line, which says that the
# connection to HOST was lost (then REASON, an ERE, if given).
assert_link_lost () {  # WHAT START SECS HOST [REASON]
    local took=$((SECONDS - $2))
    [ "$took" -le "$3" ] || fail "$1: took $took s"
    assert_eq 25 "$REMOTE_RC" "$1: exit code ($(cat "$T/remote.err"))"
    assert_eq 1 "$(wc -l < "$T/remote.err")" "$1: lines ($(cat "$T/remote.err"))"
    grep -qE "^ferry: ssh connection to $4 lost: ${5:-}" "$T/remote.err" ||
        fail "$1: the line: $(cat "$T/remote.err")"
}

# The remote ferries in $T/remote.pids have read or written BYTES of their
# streams between them (read(2) and write(2) on stdin and stdout).
remote_moved () {  # BYTES
    local n
    n=$(for pid in $(cat "$T/remote.pids" 2> /dev/null); do cat "/proc/$pid/io" 2> /dev/null; done |
        awk '/^[rw]char:/ { n += $2 } END { print n + 0 }')
    [ "$n" -ge "$1" ]
}
