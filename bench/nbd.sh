#!/usr/bin/env bash
# bench/nbd.sh: nbdcopy from an nbdkit pattern export to null:, four ways,
# interleaved in each round: directly, through plain ferry, through
# ferry --nbd, and through socat -b 1048576.  Each relay is a listener that
# serves every connection nbdcopy opens (ferry -l -k LISTEN TARGET; socat
# UNIX-LISTEN,fork), so all four see the same multi-connection nbdcopy.
# Only reports; asserts nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
size=2G rounds=3 ferry= plot=
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --ferry) ferry=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    -h|--help)
        echo "usage: bench/nbd.sh [--size 2G] [--rounds 3] [--ferry PATH] [--plot FILE.svg]"; exit 0 ;;
    *) echo "bench/nbd.sh: unknown option '$1'" >&2; exit 2 ;;
    esac
done
for t in nbdkit nbdcopy socat python3; do
    command -v "$t" >/dev/null || { echo "bench/nbd.sh: $t is not installed" >&2; exit 1; }
done
# --plot: Debian's python3, which python3-matplotlib serves.
plot_python=python3
[ -x /usr/bin/python3 ] && plot_python=/usr/bin/python3
[ -z "$plot" ] || "$plot_python" -c 'import matplotlib' 2>/dev/null ||
    { echo "bench/nbd.sh: --plot needs python3-matplotlib (scripts/install-deps.sh)" >&2; exit 1; }
if [ -z "$ferry" ]; then
    meson setup "$here/.build/nbd" "$top" >/dev/null 2>&1 ||
        meson setup --reconfigure "$here/.build/nbd" "$top" >/dev/null
    ninja -C "$here/.build/nbd" src/ferry >/dev/null
    ferry=$here/.build/nbd/src/ferry
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-nbd-bench.XXXXXX")
pids=()
cleanup () {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
start () { "$@" & pids+=($!); }
wait_socket () { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }

# The relays' CPU (user + sys, theirs and their reaped children's, in
# clock ticks) is read around each copy; "direct" has no relay.
declare -A relay_pid
cpu_ticks () { if [ -n "$1" ]; then sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 + $14 + $15 }'; else echo 0; fi; }
start nbdkit -f -U "$T/src.sock" pattern size="$size"
start "$ferry" -l -k "unix:$T/ferry.sock" "unix:$T/src.sock"
relay_pid[ferry]=$!
start "$ferry" -l -k --nbd --stats-file "$T/stats" "unix:$T/ferry-nbd.sock" "unix:$T/src.sock"
relay_pid[ferry-nbd]=$!
start socat -b 1048576 "UNIX-LISTEN:$T/socat.sock,fork" "UNIX-CONNECT:$T/src.sock"
relay_pid[socat-1m]=$!
for s in src ferry ferry-nbd socat; do wait_socket "$T/$s.sock"; done

ways=(direct:src ferry:ferry ferry-nbd:ferry-nbd socat-1m:socat)
: > "$T/runs"
for r in $(seq "$rounds"); do
    for w in "${ways[@]}"; do
        name=${w%%:*} sock=${w#*:}
        cpu_before=$(cpu_ticks "${relay_pid[$name]:-}")
        start_ns=$(date +%s%N)
        nbdcopy "nbd+unix:///?socket=$T/$sock.sock" null:
        end_ns=$(date +%s%N)
        cpu_after=$(cpu_ticks "${relay_pid[$name]:-}")
        echo "$name $r $((end_ns - start_ns)) $((cpu_after - cpu_before))" >> "$T/runs"
    done
done

python3 - "$T/runs" "$size" "$(getconf CLK_TCK)" "$T/plot.tsv" <<'PY'
import statistics, sys
runs, ticks = {}, {}
for line in open(sys.argv[1]):
    name, _, ns, cpu = line.split()
    runs.setdefault(name, []).append(int(ns) / 1e9)
    ticks.setdefault(name, []).append(int(cpu))
size = sys.argv[2]
mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
nbytes = int(size[:-1]) * mult[size[-1]] if size[-1] in mult else int(size)
mib = {n: nbytes / (1 << 20) / statistics.median(t) for n, t in runs.items()}
cpu = {n: statistics.median(t) / int(sys.argv[3]) / (nbytes / (1 << 30)) for n, t in ticks.items()}
print(f"nbdcopy pattern {size} -> null:, {len(next(iter(runs.values())))} interleaved rounds, median")
print(f"{'way':<10} {'MiB/s':>8} {'min s':>7} {'max s':>7} {'relay CPU s/GiB':>16}")
with open(sys.argv[4], "w") as plot:
    for n, t in runs.items():
        relay = n != "direct"
        print(f"{n:<10} {mib[n]:8.0f} {min(t):7.2f} {max(t):7.2f} "
              + (f"{cpu[n]:16.2f}" if relay else f"{'-':>16}"))
        print(f"nbdcopy {size} to null:\t{n}\t{mib[n]}\t{cpu[n] if relay else 'nan'}", file=plot)
print()
print(f"ferry --nbd / plain ferry: {mib['ferry-nbd'] / mib['ferry']:.2f}x (target >= 0.95)")
print(f"ferry --nbd / direct:      {mib['ferry-nbd'] / mib['direct']:.2f}x (target >= 0.75)")
print(f"ferry --nbd / socat -b 1M: {mib['ferry-nbd'] / mib['socat-1m']:.2f}x (target >= 1.1)")
PY
if [ -n "$plot" ]; then
    cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
    "$plot_python" "$here/report.py" --plot-tsv "$plot" \
        "ferry NBD bench $(date -u '+%Y-%m-%d'): $(uname -sr), $(nproc) CPUs (${cpu_model:-unknown CPU}); nbdcopy pattern $size to null:, medians of $rounds rounds" \
        "$T/plot.tsv"
    echo "chart: $plot"
fi
echo
echo "ferry --nbd stats of the last connection that sent commands:"
# Blocks start at their "stats final" line; nbdcopy also opens connections
# that only negotiate.
awk '/: nbd: stats final/ { block = "" } { block = block $0 "\n" }
     /: nbd: stats final/ || /cmd=/ { if (block ~ /cmd=/) last = block }
     END { printf "%s", last }' "$T/stats"
