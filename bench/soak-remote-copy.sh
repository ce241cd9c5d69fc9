#!/usr/bin/env bash
# A soak of the remote copy (issue 25): `ferry copy --streams=4 --delta`
# up and down through a private sshd on 127.0.0.1, for --minutes (10),
# each copy with a fault picked at random: none, the session's sshd
# SIGKILLed, a remote ferry SIGKILLed, the session frozen (SIGSTOP; the
# copy runs with --keepalive=1), each at a random moment.  After a faulty
# copy a clean one must finish DST.  Counted: copies, faults, hangs (a copy
# over 60 s), mismatches (cmp after the clean copy), exit codes, ferry
# processes left behind, and each local ferry's peak RSS (first and last
# ten copies).  It only reports.
#   bench/soak-remote-copy.sh [--minutes N] [--ferry PATH]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
minutes=10 ferry=
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) minutes=$2; shift ;;
    --ferry) ferry=$2; shift ;;
    *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$ferry" ]; then
    build=$here/.build-soak-remote
    [ -d "$build" ] || meson setup --buildtype=release "$build" "$top" > /dev/null
    ninja -C "$build" src/ferry src/ferry-nbd-stream.so > /dev/null
    ferry=$build/src/ferry
fi
FERRY=$(realpath "$ferry") FERRY_SOURCE_ROOT=$top
export FERRY FERRY_SOURCE_ROOT
set +u
. "$top/tests/lib.sh"
. "$top/tests/lib-sshd.sh"
. "$top/tests/lib-nbd-stream.sh"
set -u
need /usr/bin/time cmp pkill

start_sshd soak /usr/bin:/bin
ssh_host_alias soakhost
sparse_image "$T/a.img" 128 128
mkdir "$T/far"
cp --sparse=always "$T/a.img" "$T/far/a.img"
# The remote ferries append their PIDs, for the remote-kill fault.
cat > "$T/helper" <<HELPER
#!/bin/sh
echo \$\$ >> "$T/remote.pids"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"

copy () {  # WAY [OPTIONS...]: one --delta copy; its exit code in $rc, its RSS in $T/rss
    local way=$1; shift
    local src=$T/a.img dst=soakhost:$T/far/a.img
    [ "$way" = down ] && src=soakhost:$T/far/a.img dst=$T/b.img
    rc=0
    timeout --kill-after=2 60 /usr/bin/time -o "$T/rss" -f %M env HOME="$SSH_HOME" SSH_AUTH_SOCK= \
        "$FERRY" copy --remote-helper="$T/helper" --streams=4 --delta "$@" "$src" "$dst" \
        2> "$T/err" || rc=$?
}
fault () {  # KIND: after a random 0-0.3 s
    sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
    case $1 in
    sshd) pkill -KILL -P "$SSHD_PID" || true ;;
    remote) kill -KILL $(shuf -n 1 "$T/remote.pids" 2> /dev/null) 2> /dev/null || true ;;
    freeze) pkill -STOP -P "$SSHD_PID" || true ;;
    esac
}
thaw () { pkill -CONT -P "$SSHD_PID" 2> /dev/null || true; }

copies=0 faults=0 hangs=0 mismatches=0 left=0
declare -A codes=()
rss=()
cp --sparse=always "$T/a.img" "$T/b.img"
end=$((SECONDS + minutes * 60))
while [ $SECONDS -lt $end ]; do
    # A changed block on the source side of each way, so that --delta sends.
    # SRC gets a changed block, DST is the copy before it: --delta sends it.
    printf 'soak %d' "$copies" | dd of="$T/a.img" bs=1 seek=$(((RANDOM % 2048) * 65536)) conv=notrunc status=none
    way=up; [ $((RANDOM % 2)) -eq 0 ] && way=down
    [ "$way" = down ] && cp --sparse=always "$T/a.img" "$T/far/a.img"
    kinds=(none sshd remote freeze)
    kind=${kinds[RANDOM % 4]}
    rm -f "$T/remote.pids"
    opts=()
    [ "$kind" = freeze ] && opts=(--keepalive=1)
    if [ "$kind" != none ]; then
        fault "$kind" & faulter=$!
        faults=$((faults + 1))
    fi
    copy "$way" "${opts[@]}"
    [ "$kind" = none ] || { wait "$faulter" || true; thaw; }
    copies=$((copies + 1))
    codes[$kind:$rc]=$((${codes[$kind:$rc]:-0} + 1))
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && hangs=$((hangs + 1))
    rss+=("$(tail -1 "$T/rss")")
    # A clean copy finishes DST, which then equals SRC.
    copy "$way"
    copies=$((copies + 1))
    codes[clean:$rc]=$((${codes[clean:$rc]:-0} + 1))
    if [ "$way" = up ]; then cmp -s "$T/a.img" "$T/far/a.img" || mismatches=$((mismatches + 1))
    else cmp -s "$T/a.img" "$T/b.img" || mismatches=$((mismatches + 1)); fi
    cp --sparse=always "$T/a.img" "$T/far/a.img"
    cp --sparse=always "$T/a.img" "$T/b.img"
    sleep 0.2
    n=$(pgrep -c -f -- "$T/helper|--remote-helper=$T/helper" || true)
    [ "$n" -gt "$left" ] && left=$n
done
avg () { awk '{ s += $1 } END { printf "%d", NR ? s / NR : 0 }'; }
first=$(printf '%s\n' "${rss[@]:0:10}" | avg)
last=$(printf '%s\n' "${rss[@]: -10}" | avg)
echo "soak: $minutes min, $copies copies ($faults with a fault), $hangs hangs, $mismatches mismatches"
echo "soak: most ferry processes alive between copies: $left"
echo "soak: local ferry peak RSS, first ten copies with a chance of a fault $first KiB, last ten $last KiB"
for k in "${!codes[@]}"; do echo "soak: fault:exit $k: ${codes[$k]}"; done | sort
