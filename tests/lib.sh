# ferry test library: sourced by every tests/*.sh scenario.
#
# Each test runs in its own temporary directory, starts its peers itself and
# stops them by PID on exit.  A missing tool skips the test (exit 77).
set -eu

: "${FERRY:?FERRY must name the ferry binary (meson test sets it)}"
T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX")
PIDS=""

cleanup () {
    for pid in $PIDS; do kill "$pid" 2>/dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null || true; done
    # Mounts a test made inside its namespace (reexec_in_mount_ns), deepest first.
    if [ -n "${FERRY_TEST_MOUNT_NS:-}" ]; then
        findmnt -rn -o TARGET | grep "^$T/" | sort -r | xargs -r umount || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT

fail () { echo "FAIL: $*" >&2; exit 1; }
skip () { echo "SKIP: $*" >&2; exit 77; }
need () { for t in "$@"; do command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"; done; }

# Start a command in the background and remember its PID for cleanup.
# The PID is left in $LAST_PID.
bg () { "$@" & LAST_PID=$!; PIDS="$PIDS $LAST_PID"; }

wait_for_socket () {  # PATH
    for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done
    fail "socket $1 never appeared"
}

wait_for_port () {  # PORT
    for _ in $(seq 100); do
        ss -Hltn "sport = :$1" | grep -q . && return 0; sleep 0.05
    done
    fail "port $1 never opened"
}

free_port () {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Random test data of N bytes in $T/NAME, fast even for hundreds of MiB.
make_data () {  # NAME BYTES
    head -c "$2" /dev/urandom > "$T/$1"
}

sha () { sha256sum "$@" | cut -d' ' -f1; }

assert_same_file () {  # EXPECTED ACTUAL WHAT
    [ "$(sha "$1")" = "$(sha "$2")" ] ||
        fail "$3: sha256 differs ($(stat -c %s "$1") bytes expected, $(stat -c %s "$2") got)"
}

assert_eq () {  # EXPECTED ACTUAL WHAT
    [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"
}

assert_contains () {  # FILE TEXT WHAT
    grep -qF -- "$2" "$1" || fail "$3: '$2' not in $(cat "$1")"
}

# Run a command with a deadline; fails the test if it hangs.
within () {  # SECS CMD...
    local secs=$1; shift
    timeout --kill-after=2 "$secs" "$@"
}

# Re-run the calling test in a private mount namespace, so it may mount
# tmpfs over system paths (/run, /var/lib, ...) without touching the host.
# Call it first thing after sourcing lib.sh; inside, FERRY_TEST_MOUNT_NS=1.
reexec_in_mount_ns () {  # ARGS...
    [ -n "${FERRY_TEST_MOUNT_NS:-}" ] && return 0
    need unshare
    unshare -m --propagation private true 2>/dev/null ||
        skip "cannot create a mount namespace (needs root)"
    trap - EXIT
    rm -rf "$T"
    FERRY_TEST_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
}

# UNIX socket files that exist but refuse connections (bound, never
# listened on): enough for code that only checks that a socket exists.
fake_socket () {  # PATH...
    [ $# -gt 0 ] || return 0
    python3 -c '
import os, socket, sys
for p in sys.argv[1:]:
    os.makedirs(os.path.dirname(p), exist_ok=True)
    socket.socket(socket.AF_UNIX).bind(p)' "$@"
}

# Make $T/bin/NAME a link to ferry, so ferry runs under that name.
ferry_link () {  # NAME
    mkdir -p "$T/bin"
    ln -sf "$FERRY" "$T/bin/$1"
}

# Sample "FUNC PID" every 50 ms while PID lives, keeping the largest number
# it printed in FILE.  Start it with bg; it ends by itself with PID.
track_max () {  # FILE PID FUNC
    local max=0 v
    echo 0 > "$1"
    while kill -0 "$2" 2>/dev/null; do
        v=$("$3" "$2" 2>/dev/null) || v=0
        if [ "${v:-0}" -gt "$max" ]; then max=$v; echo "$max" > "$1"; fi
        sleep 0.05
    done
}

# For track_max: resident memory in KiB, and the count of open sockets.
rss_kib () { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
socket_count () { find "/proc/$1/fd" -lname 'socket:*' 2>/dev/null | wc -l; }

# Wait until COND (a command) succeeds, polling every 50 ms for SECS.
wait_until () {  # SECS CMD...
    local secs=$1; shift
    for _ in $(seq $((secs * 20))); do "$@" && return 0; sleep 0.05; done
    fail "timed out after ${secs}s waiting for: $*"
}
has_sockets () { [ "$(socket_count "$1")" -eq "$2" ]; }  # PID N, for wait_until
