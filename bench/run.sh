#!/usr/bin/env bash
# bench/run.sh: ferry against the other stdio <-> socket helpers, interleaved
# in one run, every transfer verified.  Only reports; asserts nothing.
# See bench/README.md for what each column means.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
args=("$@")

usage () {
    cat <<'EOF'
usage: bench/run.sh [OPTIONS]
  --quick             smoke mode: 4 MiB, 1 round, short ping-pongs, 1 s slow reader,
                      no extra rounds
  --bytes SIZE        payload per direction (K, M, G suffixes; default 1G)
  --rounds N          interleaved rounds (default 3)
  --ping-count N      64-byte round trips over UNIX (default 10000)
  --split-count N     split-message round trips over TCP (default 1000)
  --ping-seconds S    end either ping-pong after S seconds if not done (default 2)
  --slow-seconds S    slow-unix: the stdout reader is paced to take --bytes in S
                      seconds (default 10); must be below --timeout
  --helpers LIST      comma-separated subset of:
                      ferry,ferry-copy,nc,socat,socat-1m,virt-ssh-helper,splice-ref
  --scenarios LIST    comma-separated subset of: up-unix,down-unix,both-unix,
                      up-tcp,down-tcp,both-tcp,ping-unix,split-tcp,slow-unix
  --ferry PATH        measure this ferry binary (default: build one with meson)
  --ferry-base PATH   also measure this ferry binary, as helper ferry-base (e.g. the
                      previous commit's build), interleaved with the others
  --build-dir DIR     where ferry and the bench tools are built (default bench/.build)
  --max-spread PCT    a cell whose rounds spread more than PCT% gets extra rounds (default 20)
  --extra-rounds N    at most N extra rounds for noisy cells (default 1)
  --timeout SECS      kill a helper that takes longer than SECS in one run (default 120)
  --raw FILE          keep the raw per-run records in FILE
  --plot FILE.svg     also draw the throughput rows as a chart (python3-matplotlib)
EOF
}

bytes=1G rounds=3 ping_count=10000 split_count=1000 ping_seconds=2 max_spread=20 extra_rounds=1
slow_seconds=10 timeout=120 ferry= ferry_base= build_dir=$here/.build raw_keep= quick= plot=
rss_every=100  # ms between the slow-unix scenario's VmRSS samples
helpers=ferry,ferry-copy,nc,socat,socat-1m,virt-ssh-helper,splice-ref
scenarios=up-unix,down-unix,both-unix,up-tcp,down-tcp,both-tcp,ping-unix,split-tcp,slow-unix
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 bytes=4M rounds=1 ping_count=200 split_count=4 ping_seconds=0.5
             slow_seconds=1 extra_rounds=0 timeout=20
             shift; continue ;;
    -h|--help) usage; exit 0 ;;
    esac
    [ $# -ge 2 ] || { usage >&2; exit 2; }
    case $1 in
    --bytes) bytes=$2 ;;
    --rounds) rounds=$2 ;;
    --ping-count) ping_count=$2 ;;
    --split-count) split_count=$2 ;;
    --ping-seconds) ping_seconds=$2 ;;
    --slow-seconds) slow_seconds=$2 ;;
    --helpers) helpers=$2 ;;
    --scenarios) scenarios=$2 ;;
    --ferry) ferry=$2 ;;
    --ferry-base) ferry_base=$2 ;;
    --build-dir) build_dir=$2 ;;
    --max-spread) max_spread=$2 ;;
    --extra-rounds) extra_rounds=$2 ;;
    --timeout) timeout=$2 ;;
    --raw) raw_keep=$2 ;;
    --plot) plot=$2 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift 2
done

# Debian's python3, which python3-matplotlib serves (a python3 first in the
# PATH may be another one); checked before the runs, not after them.
plot_python=python3
[ -x /usr/bin/python3 ] && plot_python=/usr/bin/python3
[ -z "$plot" ] || "$plot_python" -c 'import matplotlib' 2>/dev/null ||
    { echo "bench/run.sh: --plot needs python3-matplotlib (scripts/install-deps.sh)" >&2; exit 1; }

case $bytes in
*[Kk]) bytes=$(( ${bytes%?} * 1024 )) ;;
*[Mm]) bytes=$(( ${bytes%?} * 1024 * 1024 )) ;;
*[Gg]) bytes=$(( ${bytes%?} * 1024 * 1024 * 1024 )) ;;
esac
for n in "$bytes" "$rounds" "$ping_count" "$split_count" "$max_spread" "$extra_rounds" "$timeout"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "bench: not a number: '$n'" >&2; exit 2; }
done
for n in "$ping_seconds" "$slow_seconds"; do
    [[ $n =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench: not a number: '$n'" >&2; exit 2; }
done

# virt-ssh-helper finds its daemon's socket under /run/libvirt.  Run the
# whole bench in a private mount namespace with a /run of its own, so the
# host's /run is never touched (and concurrent benches never meet there).
if [ -z "${FERRY_BENCH_MOUNT_NS:-}" ] && [[ ,$helpers, == *,virt-ssh-helper,* ]] &&
   command -v unshare >/dev/null && unshare -m --propagation private true 2>/dev/null; then
    FERRY_BENCH_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "${args[@]}"
fi

# --- build ------------------------------------------------------------------
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
for tool in drive splice-ref; do
    if [ ! -x "$build_dir/$tool" ] || [ "$here/$tool.c" -nt "$build_dir/$tool" ]; then
        cc -O2 -Wall -Wextra -Werror -pthread -o "$build_dir/$tool" "$here/$tool.c"
    fi
done
ferry_origin="given with --ferry"
if [ -z "$ferry" ]; then
    if { [ ! -f "$build_dir/ferry/build.ninja" ] &&
         ! meson setup "$build_dir/ferry" "$top" > "$build_dir/ferry-build.log" 2>&1; } ||
       ! ninja -C "$build_dir/ferry" > "$build_dir/ferry-build.log" 2>&1; then
        tail -n 20 "$build_dir/ferry-build.log" >&2
        echo "bench: building ferry failed (log: $build_dir/ferry-build.log)" >&2
        exit 1
    fi
    ferry=$build_dir/ferry/src/ferry
    ferry_origin="built from git $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'),"
    ferry_origin+=" buildtype $(meson introspect --buildoptions "$build_dir/ferry" 2>/dev/null |
        python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))' 2>/dev/null || echo '?')"
fi
[ -x "$ferry" ] || { echo "bench: no ferry binary at $ferry" >&2; exit 2; }

# --- helpers ----------------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-bench.XXXXXX")
raw=$tmp/raw.tsv
: > "$raw"

# virt-ssh-helper URI DRIVER:///system connects to
# /var/run/libvirt/virtDRIVERd-sock when that exists (libvirt's "direct"
# mode), so a driver name of our own plus a symlink, in our private /run,
# lets it reach our socket.
vsh_driver=ferrybench
cleanup () {
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

skipped=()
available () {  # NAME -> 0 if the helper can run here
    case $1 in
    ferry|splice-ref) return 0 ;;
    ferry-base) [ -x "$ferry_base" ] && return 0
        skipped+=("ferry-base: no --ferry-base binary"); return 1 ;;
    ferry-copy)
        # Not `| grep -q`: it may exit before the writer is done, and with
        # pipefail the writer's SIGPIPE fails the test.
        [[ $("$ferry" --help-all 2>&1) == *--no-splice* ]] && return 0
        skipped+=("ferry --no-splice: this ferry has no --no-splice option"); return 1 ;;
    nc)
        command -v nc >/dev/null && [[ $(nc -h 2>&1) == *OpenBSD* ]] && return 0
        skipped+=("nc -N: OpenBSD nc (netcat-openbsd) is not installed"); return 1 ;;
    socat|socat-1m)
        command -v socat >/dev/null && return 0
        skipped+=("$1: socat is not installed"); return 1 ;;
    virt-ssh-helper)
        if ! command -v virt-ssh-helper >/dev/null; then
            skipped+=("virt-ssh-helper: not installed (libvirt-daemon)"); return 1
        fi
        if [ -z "${FERRY_BENCH_MOUNT_NS:-}" ]; then
            skipped+=("virt-ssh-helper: needs a private mount namespace (root and unshare)")
            return 1
        fi
        mount -t tmpfs -o mode=755,size=1m ferry-bench-run /run &&
            mkdir /run/libvirt &&
            ln -s "$tmp/vsh.sock" "/run/libvirt/virt${vsh_driver}d-sock" && return 0
        skipped+=("virt-ssh-helper: cannot set up /run/libvirt in the private mount namespace")
        return 1 ;;
    *)
        echo "bench: unknown helper '$1'" >&2; exit 2 ;;
    esac
}

label () {
    case $1 in
    ferry) echo "ferry" ;;
    ferry-base) echo "ferry (base)" ;;
    ferry-copy) echo "ferry --no-splice" ;;
    nc) echo "nc -N" ;;
    socat) echo "socat" ;;
    socat-1m) echo "socat -b 1048576" ;;
    virt-ssh-helper) echo "virt-ssh-helper" ;;
    splice-ref) echo "splice reference" ;;
    esac
}

# The helper's command line for a transport; {PATH} and {PORT} are filled
# in by drive.  Fails for a combination that does not exist.
command_for () {  # HELPER unix|tcp
    local unix=$([ "$2" = unix ] && echo 1 || true)
    case $1 in
    ferry) [ -n "$unix" ] && echo "$ferry unix:{PATH}" || echo "$ferry tcp:127.0.0.1:{PORT}" ;;
    ferry-base) [ -n "$unix" ] && echo "$ferry_base unix:{PATH}" ||
                echo "$ferry_base tcp:127.0.0.1:{PORT}" ;;
    ferry-copy) [ -n "$unix" ] && echo "$ferry --no-splice unix:{PATH}" ||
                echo "$ferry --no-splice tcp:127.0.0.1:{PORT}" ;;
    nc) [ -n "$unix" ] && echo "nc -N -U {PATH}" || echo "nc -N 127.0.0.1 {PORT}" ;;
    socat) [ -n "$unix" ] && echo "socat - UNIX-CONNECT:{PATH}" || echo "socat - TCP:127.0.0.1:{PORT}" ;;
    socat-1m) [ -n "$unix" ] && echo "socat -b 1048576 - UNIX-CONNECT:{PATH}" ||
              echo "socat -b 1048576 - TCP:127.0.0.1:{PORT}" ;;
    virt-ssh-helper) [ -n "$unix" ] && echo "virt-ssh-helper $vsh_driver:///system" ;;
    splice-ref) [ -n "$unix" ] && echo "$build_dir/splice-ref unix:{PATH}" ||
                echo "$build_dir/splice-ref tcp:127.0.0.1:{PORT}" ;;
    esac
}

[ -n "$ferry_base" ] && [[ ",$helpers," != *,ferry-base,* ]] && helpers=ferry-base,$helpers
run_list=()
IFS=, read -ra want_helpers <<< "$helpers"
for h in "${want_helpers[@]}"; do
    available "$h" && run_list+=("$h")
done
IFS=, read -ra scenario_list <<< "$scenarios"
for s in "${scenario_list[@]}"; do
    case $s in
    up-unix|down-unix|both-unix|up-tcp|down-tcp|both-tcp|ping-unix|split-tcp|slow-unix) ;;
    *) echo "bench: unknown scenario '$s'" >&2; exit 2 ;;
    esac
done
# The slow reader's pace, in bytes per second.
if [[ ,$scenarios, == *,slow-unix,* ]]; then
    slow_rate=$(awk -v b="$bytes" -v s="$slow_seconds" -v t="$timeout" \
        'BEGIN { if (s <= 0 || s >= t) exit 1; printf "%.0f", b / s }') ||
        { echo "bench: --slow-seconds must be above 0 and below --timeout ($timeout)" >&2; exit 2; }
fi

# One measured run of HELPER in SCENARIO, appended to $raw.
run_one () {  # ROUND SCENARIO HELPER
    local round=$1 scenario=$2 helper=$3 kind=${2%-*} transport=${2#*-}
    local cmd listen=tcp out err
    cmd=$(command_for "$helper" "$transport") || return 0
    [ -n "$cmd" ] || return 0
    if [ "$transport" = unix ]; then
        listen=unix:$tmp/s.sock
        [ "$helper" = virt-ssh-helper ] && listen=unix:$tmp/vsh.sock
    fi
    # slow: down, with a reader that keeps the helper's stdout pipe full
    local args=(--scenario "${kind/#slow/down}" --listen "$listen" --bytes "$bytes" --timeout "$timeout")
    case $kind in
    ping) args+=(--count "$ping_count" --max-seconds "$ping_seconds") ;;
    split) args+=(--count "$split_count" --max-seconds "$ping_seconds") ;;
    slow) args+=(--stdout-rate "$slow_rate" --rss-every "$rss_every") ;;
    esac
    # shellcheck disable=SC2086  # cmd is a command line of plain words
    if ! out=$("$build_dir/drive" "${args[@]}" -- $cmd 2> "$tmp/stderr"); then
        echo "bench: drive failed for $scenario / $helper:" >&2
        cat "$tmp/stderr" >&2
        exit 1
    fi
    err=$(head -n1 "$tmp/stderr" | tr '\t' ' ')
    printf 'round=%s\tscenario=%s\thelper=%s\tlabel=%s\t%s\tstderr=%s\n' \
        "$round" "$scenario" "$helper" "$(label "$helper")" "$out" "$err" >> "$raw"
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "ferry bench: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs (${cpu_model:-unknown CPU})"
echo "ferry: $ferry ($("$ferry" --version 2>/dev/null || echo '?'), $ferry_origin)"
echo "payload: $bytes bytes per direction; $rounds interleaved rounds; ping-pong $ping_count round trips (UNIX), split ping-pong $split_count (TCP), each at most ${ping_seconds} s${quick:+; QUICK smoke mode, figures are meaningless}"
if [ -n "${slow_rate:-}" ]; then
    echo "slow reader (slow-unix): stdout read at $(awk -v r="$slow_rate" 'BEGIN { printf "%.1f", r / 1048576 }') MiB/s (--bytes in ${slow_seconds} s); helper's VmRSS sampled every $rss_every ms"
fi
echo "helpers, in run order: $(for h in "${run_list[@]}"; do label "$h"; done | paste -sd';' | sed 's/;/; /g')"
for s in "${skipped[@]}"; do echo "not run: $s"; done
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)

for ((r = 1; r <= rounds; r++)); do
    for s in "${scenario_list[@]}"; do
        printf '[round %d/%d] %s:' "$r" "$rounds" "$s" >&2
        for h in "${run_list[@]}"; do
            printf ' %s' "$h" >&2
            run_one "$r" "$s" "$h"
        done
        echo >&2
    done
done

# Noisy cells (rounds spread more than --max-spread) get extra rounds, only
# those cells, still interleaved.
for ((x = 1; x <= extra_rounds; x++)); do
    noisy=$(python3 "$here/report.py" --noisy "$max_spread" "$raw")
    [ -n "$noisy" ] || break
    echo "extra round $x, spread above $max_spread%: $(echo "$noisy" | awk '{printf "%s%s/%s (%s)", (NR > 1 ? ", " : ""), $1, $2, $3}')"
    r=$((rounds + x))
    while read -r s h _; do
        printf '[extra round %d] %s: %s\n' "$x" "$s" "$h" >&2
        run_one "$r" "$s" "$h"
    done <<< "$noisy"
done

echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); bench took $(( $(date +%s) - started )) s"
echo
python3 "$here/report.py" --table "$max_spread" "$raw"
[ -n "$raw_keep" ] && cp "$raw" "$raw_keep"
if [ -n "$plot" ]; then
    "$plot_python" "$here/report.py" --plot "$plot" \
        "ferry bench $(date -u '+%Y-%m-%d'): $(uname -sr), $(nproc) CPUs (${cpu_model:-unknown CPU}); $bytes bytes per direction, medians of $rounds rounds${quick:+ (QUICK smoke mode)}" \
        "$raw"
    echo "chart: $plot"
fi
exit 0
