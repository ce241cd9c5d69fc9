# Shared by the autopkgtests here (sourced, POSIX sh): a temporary $dir,
# peers started with start_peer and stopped by PID at exit, and waits for
# their sockets.  The tests run the installed ferry: $FERRY, /usr/bin/ferry.
set -eu
FERRY=/usr/bin/ferry
dir=$(mktemp -d)
peers=
cleanup () {
    for pid in $peers; do kill "$pid" 2>/dev/null || true; done
    for pid in $peers; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail () { echo "FAIL: $*" >&2; exit 1; }

# Starts COMMAND in the background; its PID in $peer, stopped at exit.
start_peer () {  # COMMAND...
    "$@" &
    peer=$!
    peers="$peers $peer"
}

forget_peer () {  # PID
    peers=$(echo "$peers" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}

# Waits for the peer PID to exit by itself, for SECS at most (then kills
# it): its exit code in $rc.  (A polled /proc: a background watchdog's
# sleep, orphaned, would hold the test's output open past its end.)
wait_peer () {  # PID SECS
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        state=$(sed 's/.*) //; s/ .*//' "/proc/$1/stat" 2>/dev/null) || break
        [ "$state" = Z ] && break
        sleep 0.1
        i=$((i + 1))
    done
    [ "$i" -lt $(($2 * 10)) ] || { echo "killing $1 after $2 s" >&2; kill "$1" 2>/dev/null || true; }
    rc=0; wait "$1" || rc=$?
    forget_peer "$1"
}

# A TCP port on 127.0.0.1 that nothing listens on.
free_port () {
    for _ in $(seq 50); do
        p=$(shuf -i 20000-60999 -n 1)
        [ -z "$(ss -Hltn "sport = :$p")" ] && { echo "$p"; return 0; }
    done
    fail "no free port"
}

wait_for_port () {  # PORT
    for _ in $(seq 200); do
        [ -n "$(ss -Hltn "sport = :$1")" ] && return 0
        sleep 0.05
    done
    fail "nothing listens on port $1"
}

# The file appears at bind(), a moment before listen(): wait for the
# listening flag (__SO_ACCEPTCON) in /proc/net/unix.
wait_for_socket () {  # PATH
    for _ in $(seq 200); do
        grep -q " 00010000 .* $1\$" /proc/net/unix && return 0
        sleep 0.05
    done
    fail "nothing listens on $1"
}

sum () { sha256sum < "$1" | cut -d' ' -f1; }
same () {  # EXPECTED ACTUAL WHAT
    cmp "$1" "$2" || fail "$3: $2 differs from $1"
}

# A sparse raw image: MiB MiB long, 4 MiB of random data at 1 MiB, and
# 1 MiB at its end.
sparse_image () {  # PATH MiB
    truncate -s "${2}M" "$1"
    head -c 4M /dev/urandom | dd of="$1" bs=1M seek=1 conv=notrunc status=none
    head -c 1M /dev/urandom | dd of="$1" bs=1M seek=$(($2 - 1)) conv=notrunc status=none
}
