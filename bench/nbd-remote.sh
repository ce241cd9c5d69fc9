#!/usr/bin/env bash
# bench/nbd-remote.sh: the remote stream mode (one command, ferry's own ssh)
# against the ways to copy an NBD export over one OpenSSH session, in one
# run of interleaved rounds, ratios printed (issue 16's table).
#
#   upload     local SRC -> DST on the ssh host:
#                ferry --nbd-send=SRC --remote-nbd-receive=DST --streams=N ssh://...
#                the same with one channel (--streams=1, or today's ferry)
#                ferry --nbd-send=SRC | ssh HOST ferry --nbd-receive=DST
#                nbdcopy --connections=N SRC through ferry -l -k unix:L ssh://HOST/DST.sock
#   download   SRC on the ssh host -> local DST: --streams=N, one channel, and
#                ssh HOST ferry --nbd-send=SRC | ferry --nbd-receive=DST
#   re-sync    into a copy of SRC with 1% of its 64 KiB blocks overwritten:
#                --delta against a full copy, with the same channels
#   --compare-args ARGS adds the --streams=N up- and download with ARGS
#
# SRC is an image of SIZE with 25% data (nbdkit sparse-random's, random
# content), or an ext4 image of files from /usr.  With --endpoints files
# (the default) both ends are image files in a directory on tmpfs, which
# ferry reads and writes itself, and every DST a new file; with
# --endpoints nbd, SRC is served by nbdkit and every DST is a fresh nbdkit
# memory export, as before ferry took paths (nbdkit sparse-random makes
# its data as it is read: a core of this 2-core machine, which the copy
# then lacks).  Each DST is checked against SRC's digest after the run.
# Every link goes through bench/delay-proxy.c: DELAY ms each way (this
# kernel has no netem) and --rate-mbit, then 0 ms and no rate as the
# loopback rows; it counts the bytes on the wire.  Each row's time is also
# given against the link floor: the bytes that must cross over the rate,
# plus 4 round trips.
# Each ferry, local and remote (the remote ones run under sshd through a
# timing wrapper), reports CPU seconds and peak RSS via /usr/bin/time.
# Contenders that need an option this ferry lacks are reported as n/a.
# Only reports; asserts nothing.  See bench/README.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
usage () {
    cat <<'EOF'
usage: bench/nbd-remote.sh [OPTIONS]
  --rounds N       interleaved rounds (default 3)
  --size SIZE      the source's size, nbdkit's form: 1G, 256M (default 1G)
  --image KIND     the source: sparse-random (default), or ext4-usr: an ext4
                   image of SIZE holding a sample of /usr's files (~70% full)
  --data-percent P sparse-random's percent of data blocks (default 25)
  --delay-ms MS    delay each way on the delayed link (default 25: 50 ms RTT)
  --rate-mbit N    the delayed link's rate, shared by its connections (default
                   0: no limit); the loopback link has none
  --streams N      channels for --streams and nbdcopy's connections (default 4)
  --ferry-args 'ARGS'    more options for every one-command ferry contender
  --compare-args 'ARGS'  add up-args and down-args: --streams=N with ARGS
                   (e.g. --compress), each in a row against --streams=N
  --contenders LIST  run only these (comma-separated): up-streams, up-one,
                   up-openssh, up-nbdcopy, up-args, down-streams, down-one,
                   down-openssh, down-args, resync-delta, resync-full
  --no-loopback    only the delayed link
  --timeout SECS   kill a contender that runs longer than SECS (default 900)
  --gaps-ms MS     sample the delayed link every MS ms (bench/wire-timeline.py)
                   and report the idle stretches in the data's direction between
                   its first and last byte: where a stream waits at a range's end
  --endpoints KIND files (default): SRC and DST are files in --image-dir;
                   nbd: nbdkit serves SRC, and DST is nbdkit memory
  --image-dir DIR  where --endpoints files keeps them (default /dev/shm: in
                   memory, as nbdkit memory is, so the disk is not measured)
  --ferry PATH     bench this ferry (default: build one in bench/.build-nbd-remote)
EOF
}
rounds=3 size=1G image=sparse-random data_percent=25 delay_ms=25 rate_mbit=0 streams=4
timeout_s=900 ferry= ferry_args_text= compare_args_text= only= links=(rtt loopback) gaps_ms=0
endpoints=files image_dir=/dev/shm
while [ $# -gt 0 ]; do
    case $1 in
    -h|--help) usage; exit 0 ;;
    --no-loopback) links=(rtt); shift; continue ;;
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    esac
    [ $# -ge 2 ] || { usage >&2; exit 2; }
    case $1 in
    --rounds) rounds=$2 ;;
    --size) size=$2 ;;
    --image) image=$2 ;;
    --data-percent) data_percent=$2 ;;
    --delay-ms) delay_ms=$2 ;;
    --rate-mbit) rate_mbit=$2 ;;
    --streams) streams=$2 ;;
    --ferry-args) ferry_args_text=$2 ;;
    --compare-args) compare_args_text=$2 ;;
    --contenders) only=$2 ;;
    --timeout) timeout_s=$2 ;;
    --gaps-ms) gaps_ms=$2 ;;
    --endpoints) endpoints=$2 ;;
    --image-dir) image_dir=$2 ;;
    --ferry) ferry=$2 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift 2
done
for n in "$rounds" "$data_percent" "$delay_ms" "$rate_mbit" "$streams" "$timeout_s" "$gaps_ms"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "bench: not a number: '$n'" >&2; exit 2; }
done
case $image in sparse-random|ext4-usr) ;; *) echo "bench: no such image: '$image'" >&2; exit 2 ;; esac
case $endpoints in files|nbd) ;; *) echo "bench: no such endpoints: '$endpoints'" >&2; exit 2 ;; esac
read -ra ferry_args <<< "$ferry_args_text"
read -ra compare_args <<< "$compare_args_text"
size_bytes=$(numfmt --from=iec "$size") ||
    { echo "bench: not a size: '$size'" >&2; exit 2; }
ferry_origin="given with --ferry"
if [ -z "$ferry" ]; then
    build=$here/.build-nbd-remote
    [ -d "$build" ] || meson setup --buildtype=release "$build" "$top" > /dev/null
    ninja -C "$build" src/ferry src/ferry-nbd-stream.so > /dev/null   # the stream mode is the module
    ferry=$build/src/ferry
    ferry_origin="built from git $(git -C "$top" describe --always --dirty 2>/dev/null || echo '?'), release"
fi
[ -x "$ferry" ] || { echo "bench: no ferry binary at $ferry" >&2; exit 2; }
FERRY=$(realpath "$ferry")
export FERRY
set +u
. "$top/tests/lib.sh"
. "$top/tests/lib-sshd.sh"
set -u
need nbdkit nbdcopy qemu-io /usr/bin/time cc python3 od numfmt timeout
[ "$image" = sparse-random ] || need mkfs.ext4

# The options the contenders may need: a missing one makes them n/a.
ferry_help=$("$FERRY" --help-all 2>&1)
has_option () { [[ $ferry_help =~ (^|[[:space:]])--$1([=[:space:]]|$) ]]; }
lacks_any () {  # ARGS... -> the first option ferry lacks, or nothing
    local a o
    for a in "$@"; do
        o=${a%%=*}
        [[ $o != --* ]] || has_option "${o#--}" || { echo "$o"; return; }
    done
}
why=$(lacks_any "${ferry_args[@]}")
[ -z "$why" ] || { echo "bench: --ferry-args: this ferry lacks $why" >&2; exit 2; }
streams_args=() one_channel=()
if has_option streams; then
    streams_args=(--streams="$streams") one_channel=(--streams=1)
fi
missing_for () {  # CONTENDER -> the option it needs that ferry lacks, or nothing
    case $1 in
    *-streams) has_option streams || echo --streams ;;
    *-args) has_option streams || echo --streams; lacks_any "${compare_args[@]}" ;;
    resync-delta) has_option delta || echo --delta ;;
    esac
}
# The re-sync pair uses --streams=N when ferry has it, else one channel.
resync_delta="ferry --streams=$streams --delta" resync_full="ferry --streams=$streams (full copy)"
if [ ${#streams_args[@]} -eq 0 ]; then
    resync_delta="ferry --delta (one channel)" resync_full="ferry (one channel, full copy)"
fi
label () {
    case $1 in
    up-streams|down-streams) echo "ferry --streams=$streams" ;;
    up-args|down-args) echo "ferry --streams=$streams $compare_args_text" ;;
    up-one|down-one) echo "ferry, one channel (its own ssh)" ;;
    up-openssh) echo "ferry --nbd-send \\| ssh HOST ferry --nbd-receive" ;;
    up-nbdcopy) echo "nbdcopy --connections=$streams, ferry -l tunnel" ;;
    down-openssh) echo "ssh HOST ferry --nbd-send \\| ferry --nbd-receive" ;;
    resync-delta) echo "$resync_delta" ;;
    resync-full) echo "$resync_full" ;;
    esac
}
contenders_up=(up-streams up-one up-openssh up-nbdcopy)
contenders_down=(down-streams down-one down-openssh)
contenders_resync=(resync-delta resync-full)
if [ ${#compare_args[@]} -gt 0 ]; then
    contenders_up+=(up-args) contenders_down+=(down-args)
fi
if [ -n "$only" ]; then
    all=" ${contenders_up[*]} ${contenders_down[*]} ${contenders_resync[*]} "
    for name in ${only//,/ }; do
        [[ $all == *" $name "* ]] || { echo "bench: no such contender: '$name' (the *-args ones come with --compare-args)" >&2; exit 2; }
    done
    for scenario in up down resync; do
        declare -n list=contenders_$scenario
        kept=()
        for name in "${list[@]}"; do [[ ,$only, != *",$name,"* ]] || kept+=("$name"); done
        list=("${kept[@]}")
        unset -n list
    done
fi

serve () {  # NAME ARGS...: nbdkit on $T/NAME.sock; its PID in $LAST_PID
    local name=$1; shift
    bg nbdkit -f -U "$T/$name.sock" "$@"
    wait_for_socket "$T/$name.sock"
}
uri () { echo "nbd+unix:///?socket=$T/$1.sock"; }
stop () { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
# The ext4 image: a sample of /usr's files (a fixed seed) filling about 70%
# of SIZE, as hard links (copies where linking fails) in a tree in $T that
# mkfs.ext4 -d copies in; the image goes with $T.
make_ext4_usr () {
    python3 - "$T/usr-tree" "$((size_bytes * 7 / 10))" <<'PY'
import os, random, shutil, sys
tree, budget = sys.argv[1], int(sys.argv[2])
files = []
for root, dirs, names in os.walk("/usr"):
    dirs.sort()
    files += (os.path.join(root, n) for n in sorted(names))
random.Random(27).shuffle(files)
used = 0
for p in files:
    st = os.lstat(p)
    if not (os.path.islink(p) or os.path.isfile(p)) or used + st.st_size > budget:
        continue
    q = tree + p
    os.makedirs(os.path.dirname(q), exist_ok=True)
    try:
        if os.path.islink(p):
            os.symlink(os.readlink(p), q)
        else:
            try:
                os.link(p, q)
            except OSError:
                shutil.copy2(p, q)
    except OSError:
        continue
    used += st.st_size
PY
    mkfs.ext4 -q -F -d "$T/usr-tree" "$T/usr.img" "$((size_bytes / 1024))k" > /dev/null ||
        { echo "bench: mkfs.ext4 -d of /usr's sample failed" >&2; exit 1; }
    rm -rf "$T/usr-tree"
}
if [ "$image" = ext4-usr ]; then
    make_ext4_usr
    serve src file "$T/usr.img" --readonly
    image_text="ext4 image of a sample of /usr's files (mkfs.ext4 -d), $size"
else
    # random-content: incompressible data blocks (the default repeats one
    # byte over each block, which --compress would shrink to nothing).
    serve src sparse-random size="$size" seed=2 percent="$data_percent" random-content=true
    image_text="nbdkit sparse-random size=$size percent=$data_percent random-content=true"
fi
src_pid=$LAST_PID src=$(uri src) dst=$(uri dst) dst_text="fresh nbdkit memory"
if [ "$endpoints" = files ]; then
    IMG=$(mktemp -d "$image_dir/ferry-bench.XXXXXX")
    cleanup_fn rm -rf "$IMG"
    truncate -s "$size_bytes" "$IMG/src.img"
    nbdcopy "$src" "$IMG/src.img"   # sparse: nbdcopy skips the holes
    stop "$src_pid"                 # the file is the source from now on
    src=$IMG/src.img dst=$IMG/dst.img dst_text="new files"
    image_text="$image_text, as a file in $image_dir"
fi
"$FERRY" -v --nbd-send="$src" 2> "$T/src.v" > /dev/null
data_bytes=$(sed -n 's/.* data=\([0-9]*\).*/\1/p' "$T/src.v")
src_digest=$(sed -n 's/.* digest=\([0-9a-f]*\).*/\1/p' "$T/src.v")
if [ -z "$data_bytes" ] || [ -z "$src_digest" ]; then
    echo "bench: no summary from ferry -v --nbd-send: $(cat "$T/src.v")" >&2; exit 1
fi

# The remote ferry: whatever runs `ferry` on the ssh host (the OpenSSH
# contenders, --remote-helper) runs it under /usr/bin/time, one line per
# process in $T/remote.times.
mkdir "$T/bin"
cat > "$T/bin/ferry" <<WRAPPER
#!/bin/sh
exec /usr/bin/time -a -o '$T/remote.times' -f '%U %S %M' '$FERRY' "\$@"
WRAPPER
chmod +x "$T/bin/ferry"
start_sshd bench "$T/bin:/usr/bin:/bin"
user=$(id -un)
cc -O2 -o "$T/delay-proxy" "$here/delay-proxy.c"
declare -A link_port
for link in rtt loopback; do
    port=$(free_port) delay=$delay_ms rate=()
    [ "$rate_mbit" -gt 0 ] && rate=(--rate-mbit "$rate_mbit")
    [ "$link" = loopback ] && delay=0 rate=()
    bg "$T/delay-proxy" "${rate[@]}" "$port" "$SSHD_PORT" "$delay" "$T/wire.$link"
    wait_for_port "$port"
    echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
    link_port[$link]=$port
done

# --- the contenders: each copies $src to $dst over $port -------------------
TIME=(/usr/bin/time -a -f '%U %S %M')
limit=(timeout -k 5 "$timeout_s")
pipe_ok () { local s; for s in "$@"; do [ "$s" = 0 ] || return 1; done; }
own_ssh () {  # ARGS...: ferry's remote stream mode, timed into local.times
    "${limit[@]}" env HOME="$SSH_HOME" SSH_AUTH_SOCK= "${TIME[@]}" -o "$T/local.times" \
        "$FERRY" --remote-helper="$T/bin/ferry" "${ferry_args[@]}" "$@" "ssh://$user@127.0.0.1:$port?keyfile=$SSH_KEY"
}
openssh () {  # REMOTE-COMMAND: through the OpenSSH client, timed into other.times
    "${limit[@]}" "${TIME[@]}" -o "$T/other.times" "$SSH_CMD" -p "$port" 127.0.0.1 "$1"
}
local_ferry () { "${limit[@]}" "${TIME[@]}" -o "$T/local.times" "$FERRY" "$@"; }

run_contender () {  # NAME
    case $1 in
    up-streams) own_ssh --nbd-send="$src" --remote-nbd-receive="$dst" "${streams_args[@]}" ;;
    up-one) own_ssh --nbd-send="$src" --remote-nbd-receive="$dst" "${one_channel[@]}" ;;
    up-openssh)
        local_ferry --nbd-send="$src" | openssh "ferry --nbd-receive='$dst'"
        pipe_ok "${PIPESTATUS[@]}" ;;
    up-nbdcopy) tunnel_copy ;;
    down-streams) own_ssh --nbd-receive="$dst" --remote-nbd-send="$src" "${streams_args[@]}" ;;
    down-one) own_ssh --nbd-receive="$dst" --remote-nbd-send="$src" "${one_channel[@]}" ;;
    up-args) own_ssh --nbd-send="$src" --remote-nbd-receive="$dst" "${streams_args[@]}" "${compare_args[@]}" ;;
    down-args) own_ssh --nbd-receive="$dst" --remote-nbd-send="$src" "${streams_args[@]}" "${compare_args[@]}" ;;
    down-openssh)
        openssh "ferry --nbd-send='$src'" | local_ferry --nbd-receive="$dst"
        pipe_ok "${PIPESTATUS[@]}" ;;
    resync-delta) own_ssh --nbd-send="$src" --remote-nbd-receive="$dst" "${streams_args[@]}" --delta ;;
    resync-full) own_ssh --nbd-send="$src" --remote-nbd-receive="$dst" "${streams_args[@]}" ;;
    esac
}

# nbdcopy through an NBD tunnel: a fresh ferry -l -k per run (its ssh
# session is part of the time, as every contender's is), stopped with
# SIGTERM after the copy; /usr/bin/time is its parent, so it reports it.
tunnel_copy () {
    local timer rc=0
    rm -f "$T/tunnel.sock"
    env HOME="$SSH_HOME" SSH_AUTH_SOCK= "${TIME[@]}" -o "$T/local.times" "$FERRY" -l -k \
        "unix:$T/tunnel.sock" "ssh://$user@127.0.0.1:$port$T/dst.sock?proxy=direct&keyfile=$SSH_KEY" \
        2>> "$T/run.err" &
    timer=$!
    track "$timer"
    wait_for_socket "$T/tunnel.sock"
    "${limit[@]}" "${TIME[@]}" -o "$T/other.times" \
        nbdcopy --connections="$streams" "$src" "nbd+unix:///?socket=$T/tunnel.sock" || rc=$?
    pkill -TERM -P "$timer" || true   # ferry, the child of this /usr/bin/time
    if ! wait "$timer" && [ "$rc" = 0 ]; then rc=1; fi
    return "$rc"
}

# The re-sync's destination: a copy of SRC with 1% of its 64 KiB blocks
# (at least one), chosen at random with a fixed seed, overwritten.
blocks_changed=$(python3 -c "print(max(1, $size_bytes // 65536 // 100))")
mapfile -t change_cmds < <(python3 - "$size_bytes" "$blocks_changed" <<'PY'
import random, sys
size, n = int(sys.argv[1]), int(sys.argv[2])
for b in sorted(random.Random(16).sample(range(size // 65536), n)):
    print("-c")
    print(f"write -P 0xa5 {b * 65536} 64k")
PY
)
prepare_resync () {
    if [ "$endpoints" = files ]; then cp --sparse=always "$src" "$dst"; else nbdcopy "$src" "$dst"; fi
    qemu-io -f raw "${change_cmds[@]}" "$dst" > /dev/null
    [ "$("$FERRY" --nbd-digest="$dst" | cut -d' ' -f1)" != "$src_digest" ] ||
        { echo "bench: qemu-io changed nothing in the re-sync's destination" >&2; exit 1; }
}

wire () { od -An -tu8 "$T/wire.$1" | awk '{ printf "%s %s", $1, $2 }'; }
# --gaps-ms: the link's timeline during one run, then its idle stretches in
# the data's direction (up, or down for a download), from the first 4 MiB
# (past the login and set-up) to the last byte, and when those 4 MiB had
# crossed, counted from the contender's start: "IDLE-MS STRETCHES
# LONGEST-MS SET-UP-MS", where a stretch is two intervals or more; "-"
# without.  The sampler is up (its header written) before the clock starts.
sampler=
start_sampler () {  # LINK
    python3 "$here/wire-timeline.py" "$T/wire.$1" "$gaps_ms" 1 > "$T/timeline" &
    sampler=$!
    local tries=0
    until [ -s "$T/timeline" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 1000 ] || { echo "bench: the link's sampler did not start" >&2; exit 1; }
        sleep 0.01
    done
}
stop_sampler () {  # SCENARIO T0
    if [ -z "$sampler" ]; then echo -; return; fi
    kill -TERM "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    sampler=
    local column=2
    [ "$1" = down ] && column=3
    awk -v c="$column" -v ms="$gaps_ms" -v t0="$2" '
        $1 == "#" { first_byte = $NF; next }
        NR > 1 { moved[n] = $c; total[n] = $(c + 2); n++ }
        END {
            first = -1; last = -1
            for (i = 0; i < n; i++) {
                if (first < 0 && total[i] > 4194304) first = i
                if (moved[i] > 0) last = i
            }
            idle = stretches = longest = run = 0
            for (i = first; first >= 0 && i <= last; i++) {
                if (moved[i] == 0) { run++; continue }
                idle += run; if (run >= 2) stretches++; if (run > longest) longest = run
                run = 0
            }
            setup = first >= 0 ? (first_byte - t0) * 1000 + (first + 1) * ms : -1
            printf "%d %d %d %d", idle * ms, stretches, longest * ms, setup
        }' "$T/timeline"
}
times_of () {  # FILE -> "CPU-SECONDS MAX-RSS-KIB COUNT" over its processes
    awk 'NF == 3 && $1 ~ /^[0-9.]+$/ { cpu += $1 + $2; if ($3 > rss) rss = $3; n++ }
         END { printf "%.3f %d %d", cpu, rss, n }' "$1" 2>/dev/null || echo "0 0 0"
}

# One measured run into $T/raw: round link scenario contender status
# seconds, local/remote/other "cpu rss n", wire bytes up and down.
run_one () {  # ROUND LINK SCENARIO CONTENDER
    local round=$1 link=$2 scenario=$3 name=$4 dst_pid status=ok t0 t1 w0 w1 got
    port=${link_port[$link]}
    dst_pid=
    if [ "$endpoints" = nbd ]; then
        serve dst memory size="$size_bytes"
        dst_pid=$LAST_PID
    else
        rm -f "$dst"
        if [ "$name" = up-nbdcopy ]; then   # nbdcopy needs a server at the far end
            truncate -s "$size_bytes" "$dst"
            serve dst file "$dst"
            dst_pid=$LAST_PID
        fi
    fi
    [ "$scenario" = resync ] && prepare_resync
    rm -f "$T/local.times" "$T/remote.times" "$T/other.times"
    : > "$T/run.err"
    w0=$(wire "$link")
    [ "$gaps_ms" -gt 0 ] && [ "$link" = rtt ] && start_sampler "$link"
    t0=$EPOCHREALTIME
    run_contender "$name" 2>> "$T/run.err" || status=failed
    t1=$EPOCHREALTIME
    w1=$(wire "$link")
    if [ "$status" = ok ]; then
        got=$("$FERRY" --nbd-digest="$dst" 2>> "$T/run.err" | cut -d' ' -f1) || true
        [ "$got" = "$src_digest" ] || status=wrong
    fi
    if [ "$status" != ok ]; then
        echo "bench: $link $name: $status: $(tail -n 3 "$T/run.err" | paste -sd'|')" >&2
    fi
    [ -z "$dst_pid" ] || stop "$dst_pid"
    rm -f "$T/dst.sock"   # nbdkit leaves it, and would not bind it again
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$link" "$scenario" "$name" \
        "$status" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$(times_of "$T/local.times")" \
        "$(times_of "$T/remote.times")" "$(times_of "$T/other.times")" \
        "$(echo "$w0 $w1" | awk '{ print $3 - $1 }')" "$(echo "$w0 $w1" | awk '{ print $4 - $2 }')" \
        "$(stop_sampler "$scenario" "$t0")" >> "$T/raw"
}

: > "$T/raw"
for name in "${contenders_up[@]}" "${contenders_down[@]}" "${contenders_resync[@]}"; do
    why=$(missing_for "$name")
    [ -z "$why" ] || printf '%s\tn/a (ferry lacks %s)\n' "$name" "$why"
done > "$T/na"
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
echo "bench/nbd-remote.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs (${cpu_model:-unknown CPU})"
echo "ferry: $FERRY ($("$FERRY" --version 2>/dev/null | head -n1 || echo '?'), $ferry_origin)"
echo "source: $image_text ($data_bytes data bytes); destinations: $dst_text"
rate_text="no rate limit"
[ "$rate_mbit" -gt 0 ] && rate_text="$rate_mbit Mbit/s shared by its connections"
echo "links: delay-proxy, $delay_ms ms each way ($((2 * delay_ms)) ms RTT), $rate_text${links[1]:+; and 0 ms, no limit (loopback)}; rounds: $rounds, contenders rotated each round"
echo "this ferry: --streams $(has_option streams && echo yes || echo no), --delta $(has_option delta && echo yes || echo no)${ferry_args_text:+; every one-command ferry with $ferry_args_text}"
echo "re-sync: $blocks_changed of $((size_bytes / 65536)) 64 KiB blocks overwritten before each run"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$SECONDS
for ((r = 1; r <= rounds; r++)); do
    for link in "${links[@]}"; do
        for scenario in up down resync; do
            declare -n list=contenders_$scenario
            order=("${list[@]}")
            unset -n list
            n=${#order[@]}
            [ "$n" -gt 0 ] || continue
            printf '[round %d/%d] %s %s:' "$r" "$rounds" "$link" "$scenario" >&2
            for ((i = 0; i < n; i++)); do
                name=${order[(i + r - 1) % n]}
                if [ -n "$(missing_for "$name")" ]; then
                    printf ' %s (n/a)' "$name" >&2
                    continue
                fi
                printf ' %s' "$name" >&2
                run_one "$r" "$link" "$scenario" "$name"
            done
            echo >&2
        done
    done
done
echo "load average before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); bench took $((SECONDS - started)) s"
echo

labels=$T/labels
for name in "${contenders_up[@]}" "${contenders_down[@]}" "${contenders_resync[@]}"; do
    printf '%s\t%s\t%s\n' "$name" "${name%%-*}" "$(label "$name")"
done > "$labels"
python3 - "$T/raw" "$T/na" "$labels" "$size_bytes" "$data_bytes" "$delay_ms" "$streams" \
    "$rate_mbit" "$((blocks_changed * 65536))" "$image_text" "$compare_args_text" <<'PY'
import collections, statistics, sys
raw, na_file, labels_file = sys.argv[1:4]
size, data, delay, streams, rate, changed = (int(x) for x in sys.argv[4:10])
image_text, compare_args = sys.argv[10:12]
na = dict(l.rstrip("\n").split("\t") for l in open(na_file))
label, scenario_of = {}, {}
for l in open(labels_file):
    name, scenario_of[name], label[name] = l.rstrip("\n").split("\t")
scenario_text = {"up": "upload", "down": "download", "resync": "re-sync"}
runs = collections.defaultdict(dict)   # (link, contender) -> round -> record
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    rnd, link, scenario, name, status, secs = f[:6]
    lc, lr, ln = f[6].split(); rc, rr, rn = f[7].split(); oc, orss, on = f[8].split()
    runs[link, name][rnd] = dict(status=status, secs=float(secs),
        local=(float(lc), int(lr), int(ln)), remote=(float(rc), int(rr), int(rn)),
        other=(float(oc), int(orss), int(on)), up=int(f[9]), down=int(f[10]),
        gaps=tuple(int(x) for x in f[11].split()) if f[11] != "-" else None)
gib, mib = size / 2**30, 2**20
size_text = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / mib:g} MiB"

def ok(link, name):
    return {r: v for r, v in runs.get((link, name), {}).items() if v["status"] == "ok"}
def why_not(link, name):
    if name in na:
        return na[name]
    bad = [v["status"] for v in runs.get((link, name), {}).values() if v["status"] != "ok"]
    return f"{bad[0]} in {len(bad)} rounds" if bad else "not run"
def med(link, name, key):
    return statistics.median(key(v) for v in ok(link, name).values())
def secs_cell(link, name):
    return f"{med(link, name, lambda v: v['secs']):.2f}" if ok(link, name) else why_not(link, name)

rtt_text = f"{2 * delay} ms RTT" + (f", {rate} Mbit/s" if rate else "")
links = tuple(l for l in (("rtt", rtt_text), ("loopback", "loopback")) if any(k[0] == l[0] for k in runs))
# The link floor: the bytes that must cross (the data; the changed blocks
# for the re-sync) over the rate, plus 4 round trips (login and channels).
# Only a link with a rate has one.
def floor(link, name):
    if link != "rtt" or not rate:
        return None
    must = changed if scenario_of[name] == "resync" else data
    return must * 8 / (rate * 1e6) + 4 * 2 * delay / 1000
def floor_cells(link, name):  # "floor s | x floor" of the median
    f = floor(link, name)
    if f is None or not ok(link, name):
        return "- | -"
    return f"{f:.2f} | {med(link, name, lambda v: v['secs']) / f:.2f}x"

rows = [  # scenario, ferry, against (None: the link floor), target (on the delayed link)
    ("upload", "up-streams", None, "<= 1.05x the floor at 4 GiB, 1 Gbit/s; <= 1.2x at 1 GiB"),
    ("download", "down-streams", None, "<= 1.05x the floor at 4 GiB, 1 Gbit/s; <= 1.2x at 1 GiB"),
    ("upload", "up-streams", "up-openssh", ">= 2.3x faster (1 GiB, 1 Gbit/s)"),
    ("upload", "up-streams", "up-nbdcopy", ">= 1.3x faster (1 GiB, 1 Gbit/s)"),
    ("download", "down-streams", "down-openssh", "-"),
    ("re-sync after 1% of 64 KiB blocks changed", "resync-delta", "resync-full",
     ">= 10x faster, and <= 3% of the data bytes on the wire (1 GiB, 200 Mbit/s)"),
    (f"upload, {compare_args}", "up-args", "up-streams", "-"),
    (f"download, {compare_args}", "down-args", "down-streams", "-"),
    ("upload, one channel", "up-one", "up-openssh", "-"),
    ("download, one channel", "down-one", "down-openssh", "-"),
    ("upload, channels", "up-streams", "up-one", "-"),
    ("download, channels", "down-streams", "down-one", "-"),
]
print("median seconds over the rounds; ratio: the median over the rounds of the against's seconds / ferry's")
print("in the same round, or against the link floor, ferry's seconds / the floor (lower is better); floor:")
print("the data bytes (the re-sync: the changed blocks' bytes) / the rate + 4 round trips")
print(f"| scenario ({size_text}, {image_text}) | ferry | s | against | s | ratio | target |")
print("|---|---|---|---|---|---|---|")
for link, link_text in links:
    for scenario, a, b, target in rows:
        if a not in label or (b is not None and b not in label):
            continue
        if b is None:
            f = floor(link, a)
            if f is None:
                continue
            ratio = f"{med(link, a, lambda v: v['secs']) / f:.2f}x" if ok(link, a) else "n/a"
            print(f"| {scenario}, {link_text} | {label[a]} | {secs_cell(link, a)} | the link floor "
                  f"| {f:.2f} | {ratio} | {target} |")
            continue
        ra, rb = ok(link, a), ok(link, b)
        common = sorted(set(ra) & set(rb))
        ratio = (f"{statistics.median(rb[r]['secs'] / ra[r]['secs'] for r in common):.2f}x"
                 if common else "n/a")
        if a == "resync-delta" and ra:
            w = med(link, a, lambda v: v["up"] + v["down"])
            ratio += f", wire {100 * w / data:.1f}% of data"
        print(f"| {scenario}, {link_text} | {label[a]} | {secs_cell(link, a)} | {label[b]} "
              f"| {secs_cell(link, b)} | {ratio} | {target if link == 'rtt' else '-'} |")

print()
print("per contender (medians): CPU s per GiB of image, peak RSS in MiB; 'remote' is every")
print("ferry run on the ssh host (n processes, CPU summed, RSS the largest); 'other' is the")
print("ssh client or nbdcopy; MiB/s of the image's size and of its data bytes; wire: bytes")
print("through delay-proxy, both ways, over the data bytes; floor: as above, and s / floor")
print("| link | scenario | contender | s | floor s | x floor | image MiB/s | data MiB/s | wire MiB up / down "
      "| wire / data | local ferry CPU | RSS | remote ferries n | CPU | RSS | other CPU |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for link, link_text in links:
    for name in label:
        got = ok(link, name)
        first = f"| {link_text} | {scenario_text[scenario_of[name]]} | {label[name]}"
        if not got:
            print(f"{first} | {why_not(link, name)} |" + " |" * 12)
            continue
        m = lambda key: med(link, name, key)
        secs, up, down = m(lambda v: v["secs"]), m(lambda v: v["up"]), m(lambda v: v["down"])
        def cpu_rss(side):
            if not m(lambda v: v[side][2]):
                return "-", "-"
            return f"{m(lambda v: v[side][0]) / gib:.2f}", f"{m(lambda v: v[side][1]) / 1024:.1f}"
        lcpu, lrss = cpu_rss("local")
        rcpu, rrss = cpu_rss("remote")
        ocpu, _ = cpu_rss("other")
        print(f"{first} | {secs:.2f} | {floor_cells(link, name)} | {size / mib / secs:.1f} | {data / mib / secs:.1f} "
              f"| {up / mib:.2f} / {down / mib:.2f} | {(up + down) / data:.3f} | {lcpu} | {lrss} "
              f"| {m(lambda v: v['remote'][2]):g} | {rcpu} | {rrss} | {ocpu} |")
with_gaps = [(name, got) for name in label if (got := ok("rtt", name))
             and all(v["gaps"] for v in got.values())]
if with_gaps:
    print()
    print("the delayed link's idle stretches in the data's direction (--gaps-ms), from the first")
    print("4 MiB to the last byte; medians: idle ms in all, stretches of two intervals or more,")
    print("the longest, in ms; when the first 4 MiB had crossed, in ms from the contender's start")
    print("(to within an interval: the set-up); per round: idle ms")
    print("| scenario | contender | idle ms | stretches | longest ms | 4 MiB at ms | per round |")
    print("|---|---|---|---|---|---|---|")
    for name, got in with_gaps:
        g = lambda i: statistics.median(v["gaps"][i] for v in got.values())
        rounds_text = " ".join(str(got[r]["gaps"][0]) for r in sorted(got))
        print(f"| {scenario_text[scenario_of[name]]} | {label[name]} | {g(0):g} | {g(1):g} | {g(2):g} "
              f"| {g(3):g} | {rounds_text} |")
failed = [(k, r, v["status"]) for k, rs in runs.items() for r, v in rs.items() if v["status"] != "ok"]
for (link, name), r, status in failed:
    print(f"round {r}: {link} {name}: {status} (left out of the medians)")
PY
