#!/usr/bin/env bash
# bench/nbd-stream.sh: ferry's NBD stream mode against nbdcopy, interleaved
# rounds in one run, ratios printed (issue 15's table).
#
#   sparse   SIZE (2 GiB) nbdkit sparse-random (10% data) -> memory, through a pipe:
#            ferry --nbd-send | ferry --nbd-receive  vs  nbdcopy SRC - | nbdcopy - DST
#   dense    SIZE nbdkit pattern -> memory, the same two pipes, and as a
#            ceiling nbdcopy SRC DST (no pipe, multi-conn), against ferry's
#            pipe with --no-verify on both ends and with verification
#   ssh      half of SIZE, 25% data, through OpenSSH over bench/delay-proxy (DELAY ms
#            each way): both pipes through the same ssh; and, for reference,
#            nbdcopy through an NBD tunnel (ferry -l unix:LOCAL ssh://.../dst.sock)
#   digest   ferry --nbd-digest of the dense and the sparse export  vs
#            sha256sum of the same bytes from a file on tmpfs
# Also: CPU seconds per GiB of image and peak RSS of ferry's sender and receiver.
#
# With --ferry-base PATH, that ferry (e.g. the base of a change) also runs
# the local rows, interleaved, and a table of head against base follows.
#
#   bench/nbd-stream.sh [--rounds N] [--size SIZE] [--delay-ms MS] [--ferry PATH] [--ferry-base PATH]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
rounds=3 size=2G delay_ms=25 ferry= ferry_base=
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2 ;;
    --size) size=$2 ;;
    --delay-ms) delay_ms=$2 ;;
    --ferry) ferry=$2 ;;
    --ferry-base) ferry_base=$2 ;;
    *) echo "usage: bench/nbd-stream.sh [--rounds N] [--size SIZE] [--delay-ms MS] [--ferry PATH] [--ferry-base PATH]" >&2
       exit 2 ;;
    esac
    shift 2
done
if [ -z "$ferry" ]; then
    build=$here/.build-nbd-stream
    [ -d "$build" ] || meson setup --buildtype=release "$build" "$top" > /dev/null
    ninja -C "$build" src/ferry src/ferry-nbd-stream.so > /dev/null   # the stream mode is the module
    ferry=$build/src/ferry
fi
FERRY=$(realpath "$ferry")   # the ssh host runs it through a symlink
export FERRY
set +u
. "$top/tests/lib.sh"
. "$top/tests/lib-sshd.sh"
set -u
need nbdkit nbdcopy /usr/bin/time cc python3 sha256sum

size_bytes=$(numfmt --from=iec "$size") || { echo "bench: not a size: '$size'" >&2; exit 2; }
half=$((size_bytes / 2))
serve () {  # NAME ARGS...
    local name=$1; shift
    bg nbdkit -f -U "$T/$name.sock" "$@"
    wait_for_socket "$T/$name.sock"
}
uri () { echo "nbd+unix:///?socket=$T/$1.sock"; }
serve sparse sparse-random size="$size_bytes" seed=1 percent=10
serve dense pattern size="$size_bytes"
serve quarter sparse-random size="$half" seed=2 percent=25
serve dst memory size="$size_bytes"
serve dst1g memory size="$half"

mkdir "$T/bin"
ln -s "$FERRY" "$T/bin/ferry"
start_sshd bench "$T/bin:/usr/bin:/bin"
cc -O2 -o "$T/delay-proxy" "$here/delay-proxy.c"
delay_port=$(free_port)
bg "$T/delay-proxy" "$delay_port" "$SSHD_PORT" "$delay_ms"
wait_for_port "$delay_port"
echo "[127.0.0.1]:$delay_port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
remote () { "$SSH_CMD" -p "$delay_port" 127.0.0.1 "$@"; }
# The NBD tunnel for the reference row: a local socket whose connections
# ferry carries over ssh to the destination's socket.
bg "$FERRY" -l -k "unix:$T/tunnel.sock" \
    "ssh://root@127.0.0.1:$delay_port$T/dst1g.sock?keyfile=$SSH_KEY&known_hosts=$SSH_DIR/known_hosts"
wait_for_socket "$T/tunnel.sock"

# tmpfs copies for sha256sum.
shm=$(mktemp -d /dev/shm/ferry-bench.XXXXXX)
trap 'rm -rf "$shm"; cleanup' EXIT
nbdcopy "$(uri dense)" "$shm/dense.raw"
nbdcopy "$(uri sparse)" "$shm/sparse.raw"

# RUN NAME CMD: wall seconds of CMD (a shell string) into $T/r.NAME, and
# each ferry's "elapsed user sys maxrss" (from /usr/bin/time) into
# $T/t.NAME.send / .recv when the command writes them.
TIME="/usr/bin/time -f %e_%U_%S_%M"
run () {
    local name=$1 cmd=$2 t0 t1
    t0=$(date +%s.%N)
    bash -c "$cmd" 2>> "$T/log" || { echo "bench: $name failed: $(tail -3 "$T/log")" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l >> "$T/r.$name"
}
F="'$FERRY'"
# The local rows of @1, a ferry binary, as NAME-@2.
local_rows () {  # FERRY SUFFIX
    run "sparse-$2" "'$1' --nbd-send='$(uri sparse)' | '$1' --nbd-receive='$(uri dst)'"
    run "dense-$2" "'$1' --nbd-send='$(uri dense)' | '$1' --nbd-receive='$(uri dst)'"
    run "digest-dense-$2" "'$1' --nbd-digest='$(uri dense)' > /dev/null"
}
for round in $(seq "$rounds"); do
    # Head and base alternate which goes first: the first run of a round
    # finds the destination's pages cold.
    if [ -n "$ferry_base" ] && [ $((round % 2)) -eq 1 ]; then
        local_rows "$FERRY" head; local_rows "$ferry_base" base
    elif [ -n "$ferry_base" ]; then
        local_rows "$ferry_base" base; local_rows "$FERRY" head
    fi
    echo "round $round/$rounds" >&2
    run sparse-ferry "$TIME -o $T/t.sparse.send $F -v --nbd-send='$(uri sparse)' 2>$T/sparse.send.v | $TIME -o $T/t.sparse.recv $F --nbd-receive='$(uri dst)'"
    run sparse-nbdcopy "nbdcopy '$(uri sparse)' - | nbdcopy - '$(uri dst)'"
    run dense-ferry "$TIME -o $T/t.dense.send $F --nbd-send='$(uri dense)' | $TIME -o $T/t.dense.recv $F --nbd-receive='$(uri dst)'"
    run dense-noverify "$TIME -o $T/t.noverify.send $F --no-verify --nbd-send='$(uri dense)' | $TIME -o $T/t.noverify.recv $F --no-verify --nbd-receive='$(uri dst)'"
    run dense-nbdcopy "nbdcopy '$(uri dense)' - | nbdcopy - '$(uri dst)'"
    run dense-direct "nbdcopy '$(uri dense)' '$(uri dst)'"
    run ssh-ferry "$F --nbd-send='$(uri quarter)' | $SSH_CMD -p $delay_port 127.0.0.1 \"ferry --nbd-receive='$(uri dst1g)'\""
    run ssh-nbdcopy "nbdcopy '$(uri quarter)' - | $SSH_CMD -p $delay_port 127.0.0.1 \"nbdcopy - '$(uri dst1g)'\""
    run ssh-tunnel "nbdcopy '$(uri quarter)' 'nbd+unix:///?socket=$T/tunnel.sock'"
    run digest-dense-ferry "$F --nbd-digest='$(uri dense)' > /dev/null"
    run digest-dense-sha "sha256sum $shm/dense.raw > /dev/null"
    run digest-sparse-ferry "$F --nbd-digest='$(uri sparse)' > /dev/null"
    run digest-sparse-sha "sha256sum $shm/sparse.raw > /dev/null"
done
rm -rf "$shm"

python3 - "$T" "$delay_ms" "$ferry_base" "$size_bytes" <<'PY'
import statistics, sys, re
T, delay, base, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
gib = size / 2**30
text = lambda b: f"{b / 2**30:g} GiB" if b >= 2**30 else f"{b / 2**20:g} MiB"
def med(name):
    return statistics.median(float(x) for x in open(f"{T}/r.{name}"))
def times(name):
    e, u, s, m = open(f"{T}/t.{name}").read().split()[-1].split("_")
    return float(u) + float(s), int(m)
v = open(f"{T}/sparse.send.v").read()
data = int(re.search(r" data=(\d+)", v).group(1)); wire = int(re.search(r" wire=(\d+)", v).group(1))
rows = [
    (f"{text(size)}, 10% data, through a pipe", "sparse-ferry", "sparse-nbdcopy", "nbdcopy SRC - \\| nbdcopy - DST", ">= 5x"),
    (f"{text(size)} dense pattern, through a pipe", "dense-ferry", "dense-nbdcopy", "nbdcopy SRC - \\| nbdcopy - DST", ">= 1.3x"),
    ("the same, --no-verify, as a ceiling", "dense-noverify", "dense-direct", "nbdcopy SRC DST", ">= 0.8x"),
    ("the same, verified, as a ceiling", "dense-ferry", "dense-direct", "nbdcopy SRC DST", "-"),
    (f"{text(size // 2)}, 25% data, ssh, {2 * delay} ms RTT", "ssh-ferry", "ssh-nbdcopy", "nbdcopy pair through ssh", ">= 3x"),
    (f"--nbd-digest, dense {text(size)}", "digest-dense-ferry", "digest-dense-sha", "sha256sum (tmpfs)", ">= 4x"),
    (f"--nbd-digest, 10% data {text(size)}", "digest-sparse-ferry", "digest-sparse-sha", "sha256sum (tmpfs)", ">= 20x"),
]
n = len(open(f"{T}/r.sparse-ferry").readlines())
print(f"bench/nbd-stream.sh: {n} interleaved rounds, median seconds")
print("| scenario | ferry s | against | s | ratio | target |")
print("|---|---|---|---|---|---|")
for title, a, b, against, target in rows:
    print(f"| {title} | {med(a):.2f} | {against} | {med(b):.2f} | {med(b) / med(a):.2f}x | {target} |")
print(f"| reference: nbdcopy through ferry's NBD tunnel over the same ssh | | | {med('ssh-tunnel'):.2f} | | |")
print(f"wire bytes / data bytes (sparse): {wire / data if data else float('nan'):.4f} ({wire} / {data})")
for name in ("sparse", "dense", "noverify"):
    for side in ("send", "recv"):
        cpu, rss = times(f"{name}.{side}")
        print(f"{name} {side}: {cpu / gib:.2f} CPU s/GiB, peak RSS {rss / 1024:.1f} MiB")
if base:
    print(f"head against base ({base}), the same rounds:")
    print("| scenario | head s | base s | base / head |")
    print("|---|---|---|---|")
    for name in ("sparse", "dense", "digest-dense"):
        h, b = med(f"{name}-head"), med(f"{name}-base")
        print(f"| {name} | {h:.2f} | {b:.2f} | {b / h:.2f}x |")
PY
