#!/bin/bash
# The main job on an embedded default: build ferry, start `ferry -l` on a
# private UNIX socket as the sink, tunnel 1 GiB through `ferry unix:...`,
# check the sha256 on both sides and print the throughput.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
ferry=$top/build/src/ferry

size=${FERRY_DEMO_BYTES:-$((1024 * 1024 * 1024))}
dir=$(mktemp -d)
trap 'kill $sink 2>/dev/null; rm -rf "$dir"' EXIT
mkfifo "$dir/sent.fifo" "$dir/idle.fifo"

# The sink's stdin stays open and idle (a FIFO opened read-write never
# reaches EOF): an EOF there would half-close the connection, and the
# sender's ferry stops reading its stdin once the socket reaches EOF.
"$ferry" -l "unix:$dir/sink.sock" 3<> "$dir/idle.fifo" <&3 3<&- | sha256sum > "$dir/received" &
sink=$!
for _ in $(seq 100); do [ -S "$dir/sink.sock" ] && break; sleep 0.05; done

sha256sum < "$dir/sent.fifo" > "$dir/sent" &
start=$(date +%s.%N)
head -c "$size" /dev/urandom | tee "$dir/sent.fifo" | "$ferry" -v "unix:$dir/sink.sock" > /dev/null
wait
end=$(date +%s.%N)

sent=$(cut -d' ' -f1 "$dir/sent")
received=$(cut -d' ' -f1 "$dir/received")
mib=$((size / 1024 / 1024))
echo "sent     $sent"
echo "received $received"
if [ "$sent" != "$received" ]; then
    echo "demo: FAILED: the sha256 of what arrived differs from what was sent" >&2
    exit 1
fi
awk -v s="$start" -v e="$end" -v m="$mib" \
    'BEGIN { printf "demo: %d MiB tunnelled intact in %.2f s: %.0f MiB/s (end to end, including the /dev/urandom source and sha256 on both sides)\n", m, e - s, m / (e - s) }'
