#!/usr/bin/env bash
# bench/copy.sh: `ferry copy` and `ferry digest` against the tools they
# replace, in one run of interleaved rounds, every result checked, ratios
# printed with the targets (the image commands' table):
#
#   local-sparse  SIZE-LOCAL file, 10% of its 64 KiB blocks data, to a new file:
#                   ferry copy A B (and --no-verify)  vs  nbdcopy A B,
#                   cp --sparse=always A B
#                   (ferry ends with fdatasync: nbdcopy --flush is the durable
#                   like for like)
#   local-dense   SIZE-DENSE file, every block data: ferry copy, ferry copy
#                   --no-verify  vs  nbdcopy, nbdcopy --flush
#   digest        ferry digest of the SIZE-LOCAL file  vs  sha256sum, blksum
#   upload        SIZE-REMOTE file, 25% data, to a new file on the ssh host:
#                   ferry copy A HOST:B  vs  rsync -S, scp
#   download      the same file from the host: ferry copy HOST:A B  vs  rsync -S, scp
#   resync        into the host's copy of it with 1% of its blocks changed:
#                   ferry copy --delta  vs  rsync --inplace --no-whole-file
#   local-resync  on this host, into a copy of the SIZE-REMOTE file with 1% of
#                   its blocks changed: ferry copy --delta  vs  a full ferry
#                   copy, rsync --inplace --no-whole-file (its delta, forced)
#   qcow2         the same image as qcow2 to a new raw file on the host:
#                   ferry copy D.qcow2 HOST:D.img  vs  qemu-img convert to a
#                   local raw file, then rsync -S
#
# The ssh host is a private sshd on 127.0.0.1 (tests/lib-sshd.sh) behind
# bench/delay-proxy.c (DELAY ms each way: 50 ms RTT); every ssh client
# (ferry's libssh, rsync's and scp's OpenSSH) reaches it through the same
# proxy as HOST "ferrybench", one ssh config.  CPU seconds and peak RSS come
# from /usr/bin/time around every local process and every process sshd
# starts for a contender (ferry, rsync --server, sftp-server).  Only reports;
# asserts nothing.  Writes nothing outside its temporary directory.  See
# bench/README.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
usage () {
    cat <<'EOF'
usage: bench/copy.sh [OPTIONS]
  --size-local SIZE   the local sparse image and the digest's (default 4G)
  --size-dense SIZE   the local dense image (default: half of --size-local, 2G)
  --size-remote SIZE  the image of the ssh rows (default 1G)
  --rounds N          interleaved rounds (default 3), after one untimed warm-up
                      run of every contender
  --no-warmup         no warm-up run
  --scenarios LIST    comma-separated, of: local-sparse,local-dense,digest,
                      upload,download,resync,local-resync,qcow2 (default: all)
  --delay-ms MS       delay each way on the ssh link (default 25: 50 ms RTT)
  --streams N         ferry's --streams for the ssh rows (default 4)
  --timeout SECS      kill a contender that runs longer than SECS (default 1800)
  --ferry PATH        bench this ferry (default: build/src/ferry of this tree;
                      the bench builds nothing)
  --quick             smoke mode: 16M / 8M / 8M, 1 round (figures meaningless)
Sizes are numfmt --from=iec's: 4G, 256M, 1048576.
EOF
}
size_local=4G size_dense= size_remote=1G rounds=3 warmup=1 delay_ms=25 streams=4
timeout_s=1800 ferry=
all_scenarios=local-sparse,local-dense,digest,upload,download,resync,local-resync,qcow2
scenarios=$all_scenarios
while [ $# -gt 0 ]; do
    case $1 in
    -h|--help) usage; exit 0 ;;
    --quick) size_local=16M size_dense=8M size_remote=8M rounds=1; shift; continue ;;
    --no-warmup) warmup=0; shift; continue ;;
    esac
    [ $# -ge 2 ] || { usage >&2; exit 2; }
    case $1 in
    --size-local) size_local=$2 ;;
    --size-dense) size_dense=$2 ;;
    --size-remote) size_remote=$2 ;;
    --rounds) rounds=$2 ;;
    --scenarios) scenarios=$2 ;;
    --delay-ms) delay_ms=$2 ;;
    --streams) streams=$2 ;;
    --timeout) timeout_s=$2 ;;
    --ferry) ferry=$2 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift 2
done
for n in "$rounds" "$delay_ms" "$streams" "$timeout_s"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "bench: not a number: '$n'" >&2; exit 2; }
done
[ "$rounds" -ge 1 ] || { echo "bench: --rounds must be at least 1" >&2; exit 2; }
B=65536
declare -A bytes
dense_given=$size_dense
[ -n "$size_dense" ] || size_dense=$size_local   # halved below
for v in size_local size_dense size_remote; do
    bytes[$v]=$(numfmt --from=iec "${!v}" 2>/dev/null) && [ "${bytes[$v]}" -gt 0 ] ||
        { echo "bench: not a size: '${!v}'" >&2; exit 2; }
done
if [ -z "$dense_given" ]; then
    bytes[size_dense]=$((bytes[size_dense] / 2 / B * B))   # whole 64 KiB blocks
    [ "${bytes[size_dense]}" -gt 0 ] || bytes[size_dense]=$B
    size_dense=$(numfmt --to=iec "${bytes[size_dense]}")
    [ "$(numfmt --from=iec "$size_dense")" = "${bytes[size_dense]}" ] || size_dense=${bytes[size_dense]}
fi
IFS=, read -ra scenario_list <<< "$scenarios"
for s in "${scenario_list[@]}"; do
    [[ ,$all_scenarios, == *,$s,* ]] || { echo "bench: no scenario '$s'" >&2; exit 2; }
done
ferry_origin="given with --ferry"
if [ -z "$ferry" ]; then
    ferry=$top/build/src/ferry
    ferry_origin="build/src/ferry of the bench's tree, at git $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?')"
fi
[ -x "$ferry" ] || {
    echo "bench: no ferry binary at $ferry (build it: meson setup build --buildtype=release && ninja -C build, or pass --ferry)" >&2
    exit 2
}
FERRY=$(realpath "$ferry")
export FERRY
for t in nbdcopy qemu-img rsync scp ssh cmp cc python3 numfmt timeout /usr/bin/time \
         /usr/sbin/sshd /usr/lib/openssh/sftp-server; do
    command -v "$t" > /dev/null 2>&1 ||
        { echo "bench: $t is not installed (scripts/install-deps.sh installs it)" >&2; exit 2; }
done
set +u
. "$top/tests/lib.sh"
. "$top/tests/lib-sshd.sh"
set -u
mkdir "$T/img" "$T/local" "$T/remote" "$T/bin"

# --- the images: fixed seeds, a known digest each --------------------------
# make PATH SIZE PERCENT SEED: a sparse file of SIZE with PERCENT of its
# 64 KiB blocks (chosen with SEED) random data, the rest holes; prints
# ferry's block-hash digest (doc/nbd-stream.md, section 5), the whole
# file's SHA-256, the data blocks and the blocks, computed from what it
# wrote.  change PATH SIZE PERCENT SEED: overwrite PERCENT of the blocks
# (at least one; data or hole) with other random data; prints their count.
cat > "$T/images.py" <<'PY'
import hashlib, random, sys
B = 65536
mode, path, size, percent, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
n = (size + B - 1) // B
if mode == "change":
    picked = sorted(random.Random(seed).sample(range(n), max(1, int(n * percent / 100))))
    rng = random.Random(seed + 1)
    with open(path, "r+b") as f:
        for i in picked:
            f.seek(i * B)
            f.write(rng.randbytes(min(B, size - i * B)))
    print(len(picked))
    sys.exit(0)
k = n if percent >= 100 else max(1, round(n * percent / 100))
data = set(range(n)) if k == n else set(random.Random(seed).sample(range(n), k))
rng = random.Random(seed + 1)
zero = bytes(B)
zero_digest = hashlib.sha256(zero).digest()
outer, whole = hashlib.sha256(), hashlib.sha256()
with open(path, "wb") as f:
    f.truncate(size)
    for i in range(n):
        length = min(B, size - i * B)
        if i in data:
            buf = rng.randbytes(length)
            f.seek(i * B)
            f.write(buf)
        else:
            buf = zero[:length]
        outer.update(zero_digest if buf is zero else hashlib.sha256(buf).digest())
        whole.update(buf)
outer.update(size.to_bytes(8, "little"))
print(outer.hexdigest(), whole.hexdigest(), k, n)
PY
declare -A digest sha256 data_blocks
make_image () {  # NAME SIZE PERCENT SEED
    local out
    out=$(python3 "$T/images.py" make "$T/img/$1.img" "$2" "$3" "$4")
    read -r "digest[$1]" "sha256[$1]" "data_blocks[$1]" _ <<< "$out"
}
want () { [[ ,$scenarios, == *,$1,* ]]; }
echo "bench: making the images in $T" >&2
if want local-sparse || want digest; then make_image sparse "${bytes[size_local]}" 10 1; fi
if want local-dense; then make_image dense "${bytes[size_dense]}" 100 2; fi
if want upload || want download || want resync || want local-resync || want qcow2; then
    make_image quarter "${bytes[size_remote]}" 25 3
fi
if want qcow2; then qemu-img convert -f raw -O qcow2 "$T/img/quarter.img" "$T/img/disk.qcow2"; fi

# --- the ssh host ------------------------------------------------------------
# Whatever sshd runs for a contender runs under /usr/bin/time, one line per
# process in $T/remote.times: ferry (sshd's PATH finds this one first),
# rsync --server (the same), sftp-server (scp's, the Subsystem).
for prog in "ferry:$FERRY" "rsync:$(command -v rsync)" "sftp-server:/usr/lib/openssh/sftp-server"; do
    cat > "$T/bin/${prog%%:*}" <<WRAPPER
#!/bin/sh
exec /usr/bin/time -a -o '$T/remote.times' -f '%e %U %S %M' '${prog#*:}' "\$@"
WRAPPER
    chmod +x "$T/bin/${prog%%:*}"
done
start_sshd bench "$T/bin:/usr/bin:/bin" "Subsystem sftp $T/bin/sftp-server"
cc -O2 -o "$T/delay-proxy" "$here/delay-proxy.c"
port=$(free_port)
bg "$T/delay-proxy" "$port" "$SSHD_PORT" "$delay_ms" "$T/wire"
wait_for_port "$port"
echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
# One config for every client: OpenSSH's -F, and libssh's ~/.ssh/config
# (ferry runs with HOME=$SSH_HOME).
ssh_conf=$SSH_HOME/.ssh/config
cat > "$ssh_conf" <<CFG
Host ferrybench
    HostName 127.0.0.1
    Port $port
    User $(id -un)
    IdentityFile $SSH_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $SSH_DIR/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    BatchMode yes
    LogLevel ERROR
CFG
H=ferrybench
SSH_E="ssh -F $ssh_conf"

# --- the contenders ------------------------------------------------------------
TIME=(/usr/bin/time -a -o "$T/local.times" -f '%e %U %S %M')
limit=(timeout -k 5 "$timeout_s")
timed () { "${limit[@]}" "${TIME[@]}" "$@"; }   # a local process, timed
tf () { timed env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$@"; }
S=$T/img/sparse.img D=$T/img/dense.img Q=$T/img/quarter.img QC=$T/img/disk.qcow2
LB=$T/local/b.img RB=$T/remote/b.img RR=$T/remote/resync.img LR=$T/local/resync.img

contenders_local_sparse=(ls-ferry ls-ferry-nv ls-nbdcopy ls-nbdcopy-flush ls-cp)
contenders_local_dense=(ld-ferry-nv ld-ferry ld-nbdcopy ld-nbdcopy-flush)
contenders_digest=(dg-ferry dg-sha256sum dg-blksum)
contenders_upload=(up-ferry up-rsync up-scp)
contenders_download=(down-ferry down-rsync down-scp)
contenders_resync=(rs-ferry rs-rsync)
contenders_local_resync=(lr-ferry lr-ferry-full lr-rsync)
contenders_qcow2=(q-ferry q-convert-rsync)
label () {
    case $1 in
    ls-ferry|ld-ferry) echo "ferry copy A B" ;;
    ls-ferry-nv|ld-ferry-nv) echo "ferry copy --no-verify A B" ;;
    ls-nbdcopy|ld-nbdcopy) echo "nbdcopy A B" ;;
    ls-nbdcopy-flush|ld-nbdcopy-flush) echo "nbdcopy --flush A B" ;;
    ls-cp) echo "cp --sparse=always A B" ;;
    dg-ferry) echo "ferry digest A" ;;
    dg-sha256sum) echo "sha256sum A" ;;
    dg-blksum) echo "blksum A" ;;
    up-ferry) echo "ferry copy A HOST:B" ;;
    up-rsync) echo "rsync -S A HOST:B" ;;
    up-scp) echo "scp A HOST:B" ;;
    down-ferry) echo "ferry copy HOST:A B" ;;
    down-rsync) echo "rsync -S HOST:A B" ;;
    down-scp) echo "scp HOST:A B" ;;
    rs-ferry) echo "ferry copy --delta A HOST:B" ;;
    rs-rsync) echo "rsync --inplace --no-whole-file A HOST:B" ;;
    lr-ferry) echo "ferry copy --delta A B" ;;
    lr-ferry-full) echo "ferry copy A B (into the old B)" ;;
    lr-rsync) echo "rsync --inplace --no-whole-file A B" ;;
    q-ferry) echo "ferry copy D.qcow2 HOST:D.img" ;;
    q-convert-rsync) echo "qemu-img convert -O raw D.qcow2 D.img; rsync -S D.img HOST:" ;;
    esac
}
run_contender () {  # NAME
    case $1 in
    ls-ferry) tf copy "$S" "$LB" ;;
    ls-ferry-nv) tf copy --no-verify "$S" "$LB" ;;
    ls-nbdcopy) timed nbdcopy "$S" "$LB" ;;
    ls-nbdcopy-flush) timed nbdcopy --flush "$S" "$LB" ;;
    ls-cp) timed cp --sparse=always "$S" "$LB" ;;
    ld-ferry) tf copy "$D" "$LB" ;;
    ld-ferry-nv) tf copy --no-verify "$D" "$LB" ;;
    ld-nbdcopy) timed nbdcopy "$D" "$LB" ;;
    ld-nbdcopy-flush) timed nbdcopy --flush "$D" "$LB" ;;
    dg-ferry) tf digest "$S" ;;
    dg-sha256sum) timed sha256sum "$S" ;;
    dg-blksum) timed blksum "$S" ;;
    up-ferry) tf copy --streams="$streams" "$Q" "$H:$RB" ;;
    up-rsync) timed rsync -S -e "$SSH_E" "$Q" "$H:$RB" ;;
    up-scp) timed scp -q -F "$ssh_conf" "$Q" "$H:$RB" ;;
    down-ferry) tf copy --streams="$streams" "$H:$Q" "$LB" ;;
    down-rsync) timed rsync -S -e "$SSH_E" "$H:$Q" "$LB" ;;
    down-scp) timed scp -q -F "$ssh_conf" "$H:$Q" "$LB" ;;
    rs-ferry) tf copy --streams="$streams" --delta "$Q" "$H:$RR" ;;
    rs-rsync) timed rsync --inplace --no-whole-file -e "$SSH_E" "$Q" "$H:$RR" ;;
    lr-ferry) tf copy --delta "$Q" "$LR" ;;
    lr-ferry-full) tf copy "$Q" "$LR" ;;
    lr-rsync) timed rsync --inplace --no-whole-file "$Q" "$LR" ;;
    q-ferry) tf copy --streams="$streams" "$QC" "$H:$RB" ;;
    q-convert-rsync)
        timed qemu-img convert -f qcow2 -O raw "$QC" "$T/local/disk.img" &&
            timed rsync -S -e "$SSH_E" "$T/local/disk.img" "$H:$RB" ;;
    esac
}
# Each run's destination is new, except the re-sync's: the host's copy of
# the image with 1% of its blocks overwritten (fixed seed), with an old
# mtime so that rsync's quick check (size and mtime) cannot skip it.
prepare () {  # NAME
    rm -f "$LB" "$RB" "$T/local/disk.img" "$T/out"
    case $1 in
    rs-*|lr-*)
        local old=$RR
        [[ $1 == rs-* ]] || old=$LR
        cp --sparse=always "$Q" "$old"
        python3 "$T/images.py" change "$old" "${bytes[size_remote]}" 1 7 > "$T/changed"
        touch -d 2000-01-01 "$old"
        ! cmp -s "$Q" "$old" || { echo "bench: the re-sync's destination did not change" >&2; exit 1; }
        ;;
    esac
}
# Why the run's result is wrong, or nothing.
check () {  # NAME
    local got
    case $1 in
    ls-*) cmp "$S" "$LB" 2>&1 | head -n1 ;;
    ld-*) cmp "$D" "$LB" 2>&1 | head -n1 ;;
    up-*|q-*) cmp "$Q" "$RB" 2>&1 | head -n1 ;;
    down-*) cmp "$Q" "$LB" 2>&1 | head -n1 ;;
    rs-*) cmp "$Q" "$RR" 2>&1 | head -n1 ;;
    lr-*) cmp "$Q" "$LR" 2>&1 | head -n1 ;;
    dg-sha256sum)
        got=$(cut -d' ' -f1 "$T/out")
        [ "$got" = "${sha256[sparse]}" ] || echo "sha256 $got, not ${sha256[sparse]}" ;;
    dg-*)
        got=$(cut -d' ' -f1 "$T/out")
        [ "$got" = "${digest[sparse]}" ] || echo "digest $got, not ${digest[sparse]}" ;;
    esac
}
dst_of () {  # NAME: the file whose allocation the table shows, or nothing
    case $1 in
    ls-*|ld-*|down-*) echo "$LB" ;;
    up-*|q-*) echo "$RB" ;;
    rs-*) echo "$RR" ;;
    lr-*) echo "$LR" ;;
    esac
}
image_of () {
    case $1 in ls-*|dg-*) echo "${bytes[size_local]}" ;; ld-*) echo "${bytes[size_dense]}" ;;
    *) echo "${bytes[size_remote]}" ;; esac
}
is_ferry () { [[ $1 == *-ferry* ]]; }

# Contenders that cannot run here, with the reason.
declare -A na
command -v blksum > /dev/null 2>&1 ||
    na[dg-blksum]="n/a (blksum is not installed; it cannot be built here)"
# The ferry rows need ferry copy of raw files (the native file backend).
truncate -s 1M "$T/probe.img"
raw_files=yes
if ! probe_err=$(env HOME="$SSH_HOME" "$FERRY" copy "$T/probe.img" "$T/probe-copy.img" 2>&1); then
    raw_files="no: ferry copy of a raw file failed: ${probe_err%%$'\n'*}"
    for s in "${scenario_list[@]}"; do
        declare -n list=contenders_${s//-/_}
        for name in "${list[@]}"; do
            is_ferry "$name" && na[$name]="n/a (this ferry cannot copy raw files)"
        done
        unset -n list
    done
fi
rm -f "$T/probe.img" "$T/probe-copy.img"

# A stop signal ends the running contender too: its timeout(1), which
# leads a process group of its own, passes the signal on to the group.
current=
stop_current () {
    local p
    [ -n "$current" ] || return 0
    for p in "$current" $(pgrep -P "$current" 2> /dev/null); do
        [ "$(cat "/proc/$p/comm" 2> /dev/null)" != timeout ] || kill -TERM "$p" 2> /dev/null || true
    done
    wait "$current" 2> /dev/null || true
}
trap 'stop_current; exit 143' TERM
trap 'stop_current; exit 130' INT

times_of () {  # FILE -> "CPU-SECONDS MAX-RSS-KIB COUNT" over its processes
    awk 'NF == 4 && $2 ~ /^[0-9.]+$/ { cpu += $2 + $3; if ($4 > rss) rss = $4; n++ }
         END { printf "%.3f %d %d", cpu, rss, n }' "$1" 2>/dev/null || echo "0 0 0"
}
wire () { od -An -tu8 "$T/wire" | awk '{ printf "%.0f\n", $1 + $2 }'; }
# One run into $T/raw (round 0: the warm-up, not in the medians):
# round scenario name status seconds "cpu rss n" local, remote, wire bytes,
# DST's allocated bytes, why it is not ok.
run_one () {  # ROUND SCENARIO NAME
    local round=$1 scenario=$2 name=$3 status=ok why= t0 t1 w0 w1 alloc=- dst
    prepare "$name"
    rm -f "$T/local.times" "$T/remote.times"
    : > "$T/run.err"
    w0=$(wire)
    t0=$EPOCHREALTIME
    run_contender "$name" < /dev/null > "$T/out" 2>> "$T/run.err" &
    current=$!
    wait "$current" || status=failed
    current=
    t1=$EPOCHREALTIME
    w1=$(wire)
    if [ "$status" = ok ]; then
        why=$(check "$name")
        [ -z "$why" ] || status=wrong
    else
        why=$(grep -v '^Command exited with non-zero status' "$T/run.err" | tail -n 2 | paste -sd'|')
    fi
    dst=$(dst_of "$name")
    [ -n "$dst" ] && [ -e "$dst" ] && alloc=$(($(stat -c '%b * %B' "$dst")))
    [ "$status" = ok ] || echo "bench: round $round $name: $status: $why" >&2
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$scenario" "$name" "$status" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
        "$(times_of "$T/local.times")" "$(times_of "$T/remote.times")" \
        "$((w1 - w0))" "$alloc" "$why" >> "$T/raw"
}

: > "$T/raw"
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "bench/copy.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs (${cpu_model:-unknown CPU}), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
echo "ferry: $FERRY ($("$FERRY" --version 2>/dev/null | head -n1 || echo '?'), $ferry_origin, built $(date -u -r "$FERRY" '+%Y-%m-%d %H:%M UTC'))"
echo "ferry copy of raw files: $raw_files"
echo "others: $(nbdcopy --version 2>/dev/null | head -n1); rsync $(rsync --version | sed -n '1s/^rsync *version \([^ ]*\).*/\1/p'); $(ssh -V 2>&1); $(qemu-img --version | head -n1)"
echo "images (fixed seeds, 64 KiB blocks): local sparse ${size_local} ${data_blocks[sparse]:-?} data blocks (10%), dense ${size_dense}, remote ${size_remote} ${data_blocks[quarter]:-?} data blocks (25%); in $T on $(df --output=fstype "$T" | tail -n1)"
echo "ssh host: private sshd on 127.0.0.1 behind delay-proxy, $delay_ms ms each way ($((2 * delay_ms)) ms RTT); ferry --streams=$streams; each client's default cipher"
echo "rounds: $rounds, contenders rotated each round; warm-up: $([ "$warmup" = 1 ] && echo 'one untimed run of each contender first' || echo none); the page cache is not dropped"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$SECONDS
for ((r = 1 - warmup; r <= rounds; r++)); do
    for scenario in "${scenario_list[@]}"; do
        declare -n list=contenders_${scenario//-/_}
        order=("${list[@]}")
        unset -n list
        n=${#order[@]}
        if [ "$r" = 0 ]; then printf '[warm-up] %s:' "$scenario" >&2
        else printf '[round %d/%d] %s:' "$r" "$rounds" "$scenario" >&2; fi
        for ((i = 0; i < n; i++)); do
            name=${order[(i + (r > 0 ? r - 1 : 0)) % n]}
            if [ -n "${na[$name]:-}" ]; then printf ' %s (n/a)' "$name" >&2; continue; fi
            printf ' %s' "$name" >&2
            run_one "$r" "$scenario" "$name"
        done
        echo >&2
    done
done
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); bench took $((SECONDS - started)) s"
echo

for s in "${scenario_list[@]}"; do
    declare -n list=contenders_${s//-/_}
    for name in "${list[@]}"; do
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$s" "$(image_of "$name")" "$(label "$name")" "${na[$name]:-}"
    done
    unset -n list
done > "$T/contenders"
python3 - "$T/raw" "$T/contenders" "$delay_ms" "$size_local" "$size_dense" "$size_remote" <<'PY'
import collections, statistics, sys
raw, contenders_file, delay = sys.argv[1], sys.argv[2], int(sys.argv[3])
sizes = dict(zip(("local", "dense", "remote"), sys.argv[4:7]))
label, scenario_of, image, na, order = {}, {}, {}, {}, []
for l in open(contenders_file):
    name, scenario_of[name], size, label[name], na[name] = l.rstrip("\n").split("\t")
    image[name] = int(size)
    order.append(name)
runs = collections.defaultdict(dict)   # name -> round -> record
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    rnd, scenario, name, status, secs = f[:5]
    lc, lr, ln = f[5].split(); rc, rr, rn = f[6].split()
    runs[name][int(rnd)] = dict(status=status, secs=float(secs), lcpu=float(lc), lrss=int(lr),
                                ln=int(ln), rcpu=float(rc), rrss=int(rr), rn=int(rn),
                                wire=int(f[7]), alloc=None if f[8] == "-" else int(f[8]), why=f[9])
def ok(name):
    return {r: v for r, v in runs.get(name, {}).items() if v["status"] == "ok" and r > 0}
def med(name, key):
    return statistics.median(key(v) for v in ok(name).values())
def why_not(name):
    if na[name]:
        return na[name]
    timed = [v["status"] for r, v in runs.get(name, {}).items() if r > 0]
    bad = [s for s in timed if s != "ok"]
    return f"{bad[0]} in {len(bad)} of {len(timed)} rounds" if bad else "not run"
scenario_text = {
    "local-sparse": f"local file -> file, {sizes['local']}, 10% data",
    "local-dense": f"local file -> file, {sizes['dense']} dense",
    "digest": f"digest, {sizes['local']} file, 10% data",
    "upload": f"upload, {sizes['remote']} file, 25% data, {2 * delay} ms RTT",
    "download": f"download, {sizes['remote']} file, 25% data, {2 * delay} ms RTT",
    "resync": f"re-sync, 1% of the blocks changed, {sizes['remote']}, {2 * delay} ms RTT",
    "local-resync": f"local re-sync, 1% of the blocks changed, {sizes['remote']}",
    "qcow2": f"qcow2 SRC -> remote raw file, {sizes['remote']}, {2 * delay} ms RTT",
}
mib, gib = 2**20, 2**30
def fmt_s(x):
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"
print("per contender, medians over the rounds: seconds (start to exit, ssh session included);")
print("MiB/s of the image's size; CPU s (user + sys) per GiB of image, local processes and the")
print("processes sshd ran for it; peak RSS: the largest local / remote process; wire: bytes")
print("through the delay proxy, both ways; DST alloc: the destination's allocated MiB")
print("| scenario | contender | s | MiB/s | CPU s/GiB local | remote | RSS MiB local | remote | wire MiB | DST alloc MiB | n |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for name in order:
    first = f"| {scenario_text[scenario_of[name]]} | {label[name]}"
    got = ok(name)
    if not got:
        print(f"{first} | {why_not(name)} |" + " |" * 8)
        continue
    m = lambda key: med(name, key)
    secs, g = m(lambda v: v["secs"]), image[name] / gib
    remote = m(lambda v: v["rn"]) > 0
    alloc = [v["alloc"] for v in got.values() if v["alloc"] is not None]
    print(f"{first} | {fmt_s(secs)} | {image[name] / mib / secs:.1f} | {m(lambda v: v['lcpu']) / g:.2f} "
          f"| {m(lambda v: v['rcpu']) / g:.2f} | {m(lambda v: v['lrss']) / 1024:.1f} "
          + (f"| {m(lambda v: v['rrss']) / 1024:.1f} " if remote else "| - ")
          + (f"| {m(lambda v: v['wire']) / mib:.2f} " if scenario_of[name] in
             ("upload", "download", "resync", "qcow2") else "| - ")
          + (f"| {statistics.median(alloc) / mib:.1f} " if alloc else "| - ")
          + f"| {len(got)} |")
rows = [  # ferry, against, target
    ("ls-ferry", "ls-nbdcopy", ">= 1.0x"), ("ls-ferry", "ls-nbdcopy-flush", "- (durable both)"),
    ("ls-ferry", "ls-cp", "-"),
    ("ls-ferry-nv", "ls-nbdcopy", "- (like for like: neither checks)"),
    ("ld-ferry-nv", "ld-nbdcopy", ">= 0.9x"), ("ld-ferry-nv", "ld-nbdcopy-flush", "- (durable both)"),
    ("ld-ferry", "ld-nbdcopy", "- (report)"),
    ("dg-ferry", "dg-sha256sum", ">= 20x"), ("dg-ferry", "dg-blksum", "-"),
    ("up-ferry", "up-rsync", ">= 5x"), ("up-ferry", "up-scp", ">= 5x"),
    ("down-ferry", "down-rsync", ">= 5x"), ("down-ferry", "down-scp", ">= 5x"),
    ("rs-ferry", "rs-rsync", ">= 3x"),
    ("lr-ferry", "lr-ferry-full", "- (report)"), ("lr-ferry", "lr-rsync", "- (report)"),
    ("q-ferry", "q-convert-rsync", ">= 5x"),
]
print()
print("ratio: the median over the rounds of against's seconds / ferry's in the same round (higher: ferry faster)")
print("| scenario | ferry | s | against | s | ratio | target |")
print("|---|---|---|---|---|---|---|")
for a, b, target in rows:
    if a not in label:
        continue
    ra, rb = ok(a), ok(b)
    common = sorted(set(ra) & set(rb))
    ratio = f"{statistics.median(rb[r]['secs'] / ra[r]['secs'] for r in common):.2f}x" if common else "n/a"
    cell = lambda n, r: fmt_s(med(n, lambda v: v['secs'])) if r else why_not(n)
    print(f"| {scenario_text[scenario_of[a]]} | {label[a]} | {cell(a, ra)} | {label[b]} | {cell(b, rb)} "
          f"| {ratio} | {target} |")
bad = [(r, n, v) for n, rs in runs.items() for r, v in sorted(rs.items()) if v["status"] != "ok"]
for r, n, v in bad:
    print(f"{'warm-up' if r == 0 else f'round {r}'}: {label[n]}: {v['status']}: {v['why']}"
          + (" (left out of the medians)" if r > 0 else ""))
PY
