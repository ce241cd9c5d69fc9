#!/usr/bin/env bash
# A soak of ferry as a forwarder: `ferry -l -k` between tests/load-driver.c's
# clients (64 at a time, 4 MiB each way per connection, every byte checked)
# and its echo server, without a pause for --minutes (10), printing ferry's
# RSS, fd count and the connections served every minute.  It only reports;
# at the end it prints the RSS drift from the first sample to the last.
#   bench/soak.sh [--minutes N] [--no-splice] [--ferry PATH] [--build-dir DIR]
#   bench/soak.sh --short      # smoke mode: 20 s, a sample every 5 s
set -eu
here=$(cd "$(dirname "$0")" && pwd)
minutes=10 interval=60 ferry= build_dir=$here/.build no_splice=
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) minutes=$2; shift ;;
    --short) minutes=0 interval=5 ;;
    --no-splice) no_splice=--no-splice ;;
    --ferry) ferry=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift
done
seconds=$((minutes * 60)); [ "$seconds" -gt 0 ] || seconds=20

mkdir -p "$build_dir"
if [ -z "$ferry" ]; then
    [ -d "$build_dir/meson" ] || meson setup "$build_dir/meson" "$here/.." >/dev/null
    ninja -C "$build_dir/meson" src/ferry tests/load-driver >/dev/null
    ferry=$build_dir/meson/src/ferry driver=$build_dir/meson/tests/load-driver
else
    cc -O2 -D_GNU_SOURCE -pthread -o "$build_dir/load-driver" "$here/../tests/load-driver.c"
    driver=$build_dir/load-driver
fi

t=$(mktemp -d "${TMPDIR:-/tmp}/ferry-soak.XXXXXX")
pids=
trap 'kill $pids 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$t"' EXIT
"$driver" echo "$t/B.sock" & pids="$pids $!"
"$ferry" -l -k $no_splice "unix:$t/A.sock" "unix:$t/B.sock" 2> "$t/ferry.err" &
fpid=$!; pids="$pids $fpid"
for _ in $(seq 100); do [ -S "$t/A.sock" ] && [ -S "$t/B.sock" ] && break; sleep 0.05; done

"$driver" clients "$t/A.sock" 64 64 4M "$seconds" > "$t/driver.out" &
dpid=$!; pids="$pids $dpid"
rss () { awk '/^VmRSS:/ { print $2 }' "/proc/$fpid/status"; }
fds () { find "/proc/$fpid/fd" -mindepth 1 | wc -l; }
printf '%8s %10s %5s\n' elapsed RSS_KiB fds
start=$SECONDS first=
while kill -0 "$dpid" 2>/dev/null; do
    r=$(rss); first=${first:-$r}
    printf '%7ss %10s %5s\n' $((SECONDS - start)) "$r" "$(fds)"
    for _ in $(seq $((interval * 10))); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
done
wait "$dpid" || {
    cat "$t/driver.out" >&2
    tail -n 5 "$t/ferry.err" >&2
    echo "soak: the load driver failed" >&2
    exit 1
}
sleep 1
last=$(rss)
printf '%7ss %10s %5s  (idle)\n' $((SECONDS - start)) "$last" "$(fds)"
cat "$t/driver.out"
echo "soak: RSS $first -> $last KiB (drift $((last - first)) KiB) over $((SECONDS - start)) s"
