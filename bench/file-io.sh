#!/usr/bin/env bash
# bench/file-io.sh: the file backend's I/O engine, a thread pool against
# io_uring (bench/file-io.c), in one run of interleaved rounds on a file of
# SIZE in a temporary directory (on the file system of $TMPDIR):
#   read, warm   the file in the page cache
#   read, cold   the page cache dropped first (echo 1 > drop_caches; root)
#   write        a new file of SIZE, fdatasync at the end
# each with 2 MiB requests: threads at depth 4 (file-ops.c's WORKERS) and,
# for writes, at depth 1 (its FILE_WRITERS for a regular file), and
# io_uring at depth 4.  Prints the median MiB/s and CPU seconds per GiB
# over the rounds.  Only reports; asserts nothing.
#
#   bench/file-io.sh [--size SIZE] [--rounds N]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
size=2G rounds=3
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2 ;;
    --rounds) rounds=$2 ;;
    *) echo "usage: bench/file-io.sh [--size SIZE] [--rounds N]" >&2; exit 2 ;;
    esac
    shift 2
done
bytes=$(numfmt --from=iec "$size")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc -O2 -o "$T/file-io" "$here/file-io.c" -luring -lpthread
head -c "$bytes" /dev/urandom > "$T/src"
can_drop=no cold_text="; no cold reads (drop_caches needs root)"
[ -w /proc/sys/vm/drop_caches ] && can_drop=yes cold_text=
runs=("threads read warm 4" "uring read warm 4" "threads write - 1" "threads write - 4"
      "uring write - 4")
[ $can_drop = yes ] && runs+=("threads read cold 4" "uring read cold 4")
: > "$T/raw"
for ((r = 1; r <= rounds; r++)); do
    echo "[round $r/$rounds]" >&2
    n=${#runs[@]}
    for ((i = 0; i < n; i++)); do
        read -r engine op cache depth <<< "${runs[(i + r - 1) % n]}"
        rm -f "$T/out"
        if [ "$op" = read ]; then
            if [ "$cache" = cold ]; then sync; echo 1 > /proc/sys/vm/drop_caches; else cat "$T/src" > /dev/null; fi
            line=$("$T/file-io" "$engine" read "$T/src" 2097152 "$depth")
        else
            line=$("$T/file-io" "$engine" write "$T/out" "$bytes" 2097152 "$depth")
        fi
        echo "$cache $depth $line" >> "$T/raw"
    done
done
rm -f "$T/out"
echo "bench/file-io.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs; $size file on $(df -T "$T" | awk 'NR == 2 { print $2 }'), 2 MiB requests, $rounds rounds$cold_text"
python3 - "$T/raw" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    cache, depth, engine, op, total, secs, mibs, cpu = line.split()
    rows[(op, cache, engine, depth)].append((float(mibs), float(cpu) / (int(total) / 2**30)))
print("| op | engine, depth | MiB/s | min - max | CPU s/GiB | rounds |")
print("|---|---|---|---|---|---|")
for (op, cache, engine, depth), v in sorted(rows.items()):
    what = f"{op}, {cache}" if op == "read" else op
    print(f"| {what} | {engine}, {depth} | {statistics.median(x[0] for x in v):.0f} "
          f"| {min(x[0] for x in v):.0f} - {max(x[0] for x in v):.0f} "
          f"| {statistics.median(x[1] for x in v):.3f} | {len(v)} |")
PY
