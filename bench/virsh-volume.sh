#!/usr/bin/env bash
# virsh vol-download / vol-upload of 1 GiB over ssh to a private libvirtd,
# through three remote helpers in one interleaved run:
#   ferry-vsh   ferry as virt-ssh-helper (proxy=native)
#   real-vsh    libvirt's /usr/bin/virt-ssh-helper (proxy=native)
#   nc          netcat-openbsd's /usr/bin/nc (proxy=netcat, libvirt adds -q0)
# Per transfer: wall time of virsh, and CPU seconds (user+sys) of the helper,
# of the ssh session (the ssh client plus sshd's session processes, minus the
# helper), and of libvirtd (with its iohelper children).  Prints the median of
# ROUNDS runs as a markdown table.
#
#   sudo bench/virsh-volume.sh [BUILD-DIR]     (default build/)
#   BENCH_SIZE_MIB=1024 BENCH_ROUNDS=3
#
# The setup is tests/virsh-over-ssh.sh's: a private mount namespace, a
# libvirtd with UNIX sockets only, a dir pool on tmpfs, sshd on 127.0.0.1.
# Helpers are wrapped in GNU time to measure them; the wrappers' own cost
# is a fork and a wait.
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
export FERRY=${FERRY:-$build/src/ferry}
[ -x "$FERRY" ] || { echo "no ferry at $FERRY: build first (meson setup build && ninja -C build)" >&2; exit 1; }
. "$top/tests/lib.sh"
reexec_in_mount_ns "$@"
need /usr/bin/time /usr/bin/virt-ssh-helper /usr/bin/nc python3
. "$top/tests/lib-sshd.sh"
. "$top/tests/lib-libvirtd.sh"

mib=${BENCH_SIZE_MIB:-1024}
rounds=${BENCH_ROUNDS:-3}
helpers="ferry-vsh real-vsh nc"

start_libvirtd
start_dir_pool bench "$((mib + 64))M"
mkdir -p "$T/data"
mount -t tmpfs -o size="$((2 * mib + 64))M" tmpfs "$T/data"
head -c "$((mib * 1024 * 1024))" /dev/urandom > "$T/data/vol"
virsh -q -c qemu:///system vol-create-as bench vol "${mib}M" --format raw >/dev/null
# Downloads return these bytes; every upload stores them again.
virsh -q -c qemu:///system vol-upload --pool bench vol "$T/data/vol"

# Wrappers that record each program's CPU in $T/cpu-NAME.
wrap () {  # DIR NAME PROGRAM [ARGS...]
    local dir=$1 name=$2; shift 2
    mkdir -p "$dir"
    printf '#!/bin/sh\nexec /usr/bin/time -a -o %s -f "%%U %%S" %s "$@"\n' \
        "$T/cpu-helper" "$*" > "$dir/$name"
    chmod +x "$dir/$name"
}
ferry_link virt-ssh-helper
wrap "$T/path-ferry" virt-ssh-helper "$T/bin/virt-ssh-helper"
wrap "$T/path-real" virt-ssh-helper /usr/bin/virt-ssh-helper
wrap "$T/path-real" nc /usr/bin/nc
start_sshd ferry "$T/path-ferry:/usr/bin:/bin"
port_ferry=$SSHD_PORT pid_ferry=$SSHD_PID
start_sshd real "$T/path-real:/usr/bin:/bin"
port_real=$SSHD_PORT pid_real=$SSHD_PID
printf '#!/bin/sh\nexec /usr/bin/time -a -o %s -f "%%U %%S" ssh -F %s "$@"\n' \
    "$T/cpu-ssh" "$SSH_DIR/ssh_config" > "$T/ssh-timed"
chmod +x "$T/ssh-timed"

# CPU seconds of a process and its reaped children.
proc_cpu () {  # PID
    python3 -c 'import os,sys; f=open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")",1)[1].split()
print(sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK"))' "$1"
}
sum_log () { awk '{s += $1 + $2} END {printf "%.2f", s}' "$1"; }

run_one () {  # HELPER DIRECTION -> prints "wall helper ssh libvirtd"
    local helper=$1 dir=$2 port pid proxy u t0 t1 s0 s1 l0 l1
    case $helper in
        ferry-vsh) port=$port_ferry pid=$pid_ferry proxy=native ;;
        real-vsh) port=$port_real pid=$pid_real proxy=native ;;
        nc) port=$port_real pid=$pid_real proxy=netcat ;;
    esac
    u="qemu+ssh://root@127.0.0.1:$port/system?keyfile=$SSH_KEY&command=$T/ssh-timed&proxy=$proxy"
    : > "$T/cpu-helper"; : > "$T/cpu-ssh"
    rm -f "$T/data/back"
    s0=$(proc_cpu "$pid") l0=$(proc_cpu "$LIBVIRTD_PID")
    t0=$(date +%s.%N)
    if [ "$dir" = upload ]; then
        virsh -q -c "$u" vol-upload --pool bench vol "$T/data/vol"
    else
        virsh -q -c "$u" vol-download --pool bench vol "$T/data/back"
    fi || fail "$helper $dir failed"
    t1=$(date +%s.%N)
    # The session is over once sshd has reaped it (and so counted its CPU).
    for _ in $(seq 100); do pgrep -P "$pid" >/dev/null || break; sleep 0.05; done
    s1=$(proc_cpu "$pid") l1=$(proc_cpu "$LIBVIRTD_PID")
    [ "$dir" = download ] && { cmp -s "$T/data/vol" "$T/data/back" || fail "$helper: download differs"; }
    awk -v t0="$t0" -v t1="$t1" -v h="$(sum_log "$T/cpu-helper")" \
        -v c="$(sum_log "$T/cpu-ssh")" -v s0="$s0" -v s1="$s1" -v l0="$l0" -v l1="$l1" \
        'BEGIN {printf "%.2f %.2f %.2f %.2f\n", t1 - t0, h, c + s1 - s0 - h, l1 - l0}'
}

echo "virsh vol-upload/vol-download of $mib MiB, $rounds interleaved rounds, $(nproc) CPUs" >&2
for r in $(seq "$rounds"); do
    for dir in download upload; do
        for helper in $helpers; do
            echo "$helper $dir $(run_one "$helper" "$dir")" | tee -a "$T/results" >&2
        done
    done
done

echo
echo "| direction | helper | wall s | helper CPU s | ssh CPU s | libvirtd CPU s |"
echo "|---|---|---|---|---|---|"
for dir in download upload; do
    for helper in $helpers; do
        awk -v h="$helper" -v d="$dir" '$1 == h && $2 == d' "$T/results" | python3 -c '
import sys, statistics
rows = [list(map(float, l.split()[2:])) for l in sys.stdin]
med = [statistics.median(c) for c in zip(*rows)]
print("| %s | %s | %.2f | %.2f | %.2f | %.2f |" % (sys.argv[1], sys.argv[2], *med))' "$dir" "$helper"
    done
done
