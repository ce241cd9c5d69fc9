#!/usr/bin/env bash
# bench/ssh.sh: ferry's own ssh transport against the OpenSSH client running
# a helper on the server, in one interleaved run.  Only reports.
#
#   ferry      ferry ssh://root@127.0.0.1:PORT/SOCK (a direct-streamlocal
#              channel over libssh; nothing runs on the server but sshd)
#   ssh+ferry  ssh -p PORT 127.0.0.1 ferry unix:SOCK
#   ssh+nc     ssh -p PORT 127.0.0.1 nc -N -U SOCK
#
# Each moves SIZE bytes down (server -> stdout; stdin stays open and idle)
# and up (stdin -> server, which counts them and then closes), first on
# loopback, then through bench/delay-proxy adding DELAY ms each way (this
# kernel has no netem).  Byte counts are verified.  Columns: MiB/s over the
# whole command (connecting and authenticating included), and CPU seconds
# per GiB of the local process: ferry, or the ssh client.
#
#   bench/ssh.sh [--bytes SIZE] [--delay-ms MS] [--ferry PATH]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
bytes=1G delay_ms=25 ferry=
while [ $# -gt 0 ]; do
    case $1 in
    --bytes) bytes=$2 ;;
    --delay-ms) delay_ms=$2 ;;
    --ferry) ferry=$2 ;;
    *) echo "usage: bench/ssh.sh [--bytes SIZE] [--delay-ms MS] [--ferry PATH]" >&2; exit 2 ;;
    esac
    shift 2
done
n=$(numfmt --from=iec "$bytes")

if [ -z "$ferry" ]; then
    build=$here/.build-ssh
    [ -d "$build" ] || meson setup --buildtype=release "$build" "$top" > /dev/null
    ninja -C "$build" src/ferry > /dev/null
    ferry=$build/src/ferry
fi
export FERRY=$ferry
set +u
. "$top/tests/lib.sh"
. "$top/tests/lib-sshd.sh"
set -u
need socat nc /usr/bin/time cc

mkdir "$T/bin"
ln -s "$FERRY" "$T/bin/ferry"
start_sshd bench "$T/bin:/usr/bin:/bin"
cc -O2 -o "$T/delay-proxy" "$here/delay-proxy.c"
delay_port=$(free_port)
bg "$T/delay-proxy" "$delay_port" "$SSHD_PORT" "$delay_ms"
wait_for_port "$delay_port"
echo "[127.0.0.1]:$delay_port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"

bg socat "UNIX-LISTEN:$T/down.sock,fork" SYSTEM:"head -c $n /dev/zero"
bg socat "UNIX-LISTEN:$T/up.sock,fork" SYSTEM:"wc -c > $T/up-count"
wait_for_socket "$T/down.sock"
wait_for_socket "$T/up.sock"
mkfifo "$T/idle"
exec 3<> "$T/idle"            # an stdin that stays open and says nothing

command_for () {  # METHOD PORT SOCK -> the array cmd
    case $1 in
    ferry) cmd=(env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY"
                "ssh://root@127.0.0.1:$2$3?proxy=direct&keyfile=$SSH_KEY") ;;
    ssh+ferry) cmd=("$SSH_CMD" -p "$2" 127.0.0.1 ferry "unix:$3") ;;
    ssh+nc) cmd=("$SSH_CMD" -p "$2" 127.0.0.1 nc -N -U "$3") ;;
    esac
}

run_one () {  # LINK PORT DIRECTION METHOD
    local link=$1 port=$2 direction=$3 method=$4 got e u s
    command_for "$method" "$port" "$T/$direction.sock"
    rm -f "$T/up-count"
    if [ "$direction" = down ]; then
        got=$(/usr/bin/time -f '%e %U %S' -o "$T/time" timeout 600 "${cmd[@]}" <&3 | wc -c)
    else
        head -c "$n" /dev/zero | /usr/bin/time -f '%e %U %S' -o "$T/time" timeout 600 "${cmd[@]}" > /dev/null
        for _ in $(seq 50); do [ -s "$T/up-count" ] && break; sleep 0.1; done
        got=$(cat "$T/up-count" 2> /dev/null || echo 0)
    fi
    read -r e u s < <(tail -1 "$T/time")
    if [ "$got" -ne "$n" ]; then
        printf '%-9s %-5s %-10s %10s %12s  (%s of %s bytes arrived)\n' "$link" "$direction" "$method" - - "$got" "$n"
        return
    fi
    awk -v link="$link" -v dir="$direction" -v m="$method" -v n="$n" -v e="$e" -v u="$u" -v s="$s" \
        'BEGIN { printf "%-9s %-5s %-10s %10.1f %12.2f\n", link, dir, m, n / 1048576 / e, (u + s) / (n / 1073741824) }'
}

printf '%-9s %-5s %-10s %10s %12s\n' link dir method MiB/s "CPU s/GiB"
for link in loopback "+${delay_ms}ms"; do
    port=$SSHD_PORT
    [ "$link" = loopback ] || port=$delay_port
    for direction in down up; do
        for method in ferry ssh+ferry ssh+nc; do
            run_one "$link" "$port" "$direction" "$method"
        done
    done
done
