#!/bin/bash
# The main job on an embedded default: build ferry, start `ferry -l` on a
# private UNIX socket as the sink, tunnel 1 GiB (FERRY_DEMO_BYTES) through
# `ferry unix:...`, check on the far side that every byte arrived, and print
# what ferry itself did: its throughput, CPU time and peak memory.
#
# The payload is generated once, before the clock starts, from a seeded
# AES-CTR stream (fast and the same on every run) into a file on tmpfs; the
# sink compares what arrives with that file (cmp, which keeps up with the
# tunnel, where sha256 would set its pace).  Exits 0 on success, 1 with a
# loud message on a mismatch or a failed ferry, and leaves nothing behind.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
ferry=$top/build/src/ferry

size=${FERRY_DEMO_BYTES:-$((1024 * 1024 * 1024))}
dir=$(mktemp -d)
payload_dir=$dir
sink= checker=
cleanup () {
    # On a failure only: the sink's ferry (under time) and the checker.
    for pid in $checker ${sink:+$(pgrep -P "$sink")} $sink; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$dir"
    [ "$payload_dir" = "$dir" ] || rm -rf "$payload_dir"
}
trap cleanup EXIT
fail () { echo "demo: FAILED: $*" >&2; exit 1; }

# On tmpfs, so that reading it costs no disk: TMPDIR if it is one, else
# /dev/shm.
if [ "$(stat -f -c %T "$dir")" != tmpfs ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    payload_dir=$(mktemp -d /dev/shm/ferry-demo.XXXXXX)
fi
payload=$payload_dir/payload
openssl enc -aes-128-ctr -nosalt -K 66657272792064656d6f207061796c64 \
    -iv 00000000000000000000000000000000 < /dev/zero 2>/dev/null |
    head -c "$size" > "$payload" || true    # head ends openssl with SIGPIPE
[ "$(stat -c %s "$payload")" -eq "$size" ] || fail "could not generate the $size-byte payload"

# The sink: its stdin is empty, which half-closes its side at once; that
# ends one direction only, and the upload goes on.
mkfifo "$dir/received"
cmp - "$payload" < "$dir/received" > "$dir/cmp" 2>&1 &
checker=$!
/usr/bin/time -f '%U %S %M' -o "$dir/sink.time" \
    "$ferry" -l "unix:$dir/sink.sock" < /dev/null > "$dir/received" 2> "$dir/sink.err" &
sink=$!
for _ in $(seq 200); do [ -S "$dir/sink.sock" ] && break; sleep 0.05; done
[ -S "$dir/sink.sock" ] || fail "the sink never listened on $dir/sink.sock"

rc=0
/usr/bin/time -f '%U %S %M' -o "$dir/send.time" \
    "$ferry" -v "unix:$dir/sink.sock" < "$payload" > /dev/null 2> "$dir/send.err" || rc=$?
[ "$rc" -eq 0 ] || fail "the sending ferry exited $rc: $(cat "$dir/send.err")"
rc=0; wait "$sink" || rc=$?
sink=
[ "$rc" -eq 0 ] || fail "the sink ferry -l exited $rc: $(cat "$dir/sink.err")"
rc=0; wait "$checker" || rc=$?
checker=
[ "$rc" -eq 0 ] || fail "what arrived differs from what was sent: $(cat "$dir/cmp")"

# ferry -v: "ferry: stdin -> SOCKET: BYTES bytes in SECS s, RATE MiB/s, ..."
read -r bytes seconds rate < <(sed -n 's/^ferry: stdin -> .*: \([0-9]*\) bytes in \([0-9.]*\) s, \([0-9.]*\) MiB\/s.*/\1 \2 \3/p' "$dir/send.err") || true
[ "${bytes:-}" = "$size" ] || fail "the sending ferry reports ${bytes:-no} bytes sent, not $size: $(cat "$dir/send.err")"
read -r s_user s_sys s_rss < "$dir/send.time"
read -r k_user k_sys k_rss < "$dir/sink.time"
echo "demo: $((size / 1024 / 1024)) MiB tunnelled through ferry over a UNIX socket, received intact (cmp, byte for byte)"
awk -v b="$bytes" -v t="$seconds" -v r="$rate" -v su="$s_user" -v ss="$s_sys" -v sm="$s_rss" \
    -v ku="$k_user" -v ks="$k_sys" -v km="$k_rss" 'BEGIN {
        printf "demo: ferry moved %d bytes in %.2f s: %.0f MiB/s\n", b, t, r
        printf "demo: sending ferry: CPU %.2f s (user %.2f, system %.2f), peak memory %.1f MiB\n", su + ss, su, ss, sm / 1024
        printf "demo: sink ferry -l: CPU %.2f s (user %.2f, system %.2f), peak memory %.1f MiB\n", ku + ks, ku, ks, km / 1024
    }'
