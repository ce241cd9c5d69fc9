# ferry test library: sourced by every tests/*.sh scenario.
#
# Each test runs in its own temporary directory, starts its peers itself and
# stops them by PID on exit.  Whatever else it changes it undoes through
# cleanup_fn, never by hand at its end (which a failure would skip).  A
# missing tool skips the test (exit 77).
set -eu

: "${FERRY:?FERRY must name the ferry binary (meson test sets it)}"
T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX")
PIDS=""
CLEANUP_FNS=()

# Run CMD ARGS... when the test exits, however it exits, as nbdkit's tests'
# cleanup_fn: after its background processes are stopped, the last one
# registered first, before $T is removed.
cleanup_fn () {  # CMD ARGS...
    CLEANUP_FNS+=("$(printf '%q ' "$@")")
}

# Whether PID is still a child of this shell.  A tracked peer that ended
# long ago may have had its PID reused (pid_max is 32768 here), perhaps by
# another test's process: cleanup must not kill that one.
our_child () {  # PID
    # No bare `return` here: run from the EXIT trap, it would give the
    # status of the command before the trap (bash).
    local line ppid=
    while read -r line; do
        case $line in PPid:*) ppid=${line#PPid:}; break ;; esac
    done 2>/dev/null < "/proc/$1/status"
    [ "${ppid//[[:space:]]/}" = "$$" ]
}

# The one-letter state of PID (R, S, T...), empty once it is gone.
proc_state () {  # PID
    sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null || true
}

# Wait for PID, signalled by cleanup, for up to 30 s (ferry's default
# --drain-timeout is 10 s).  One still running is a hang in its stop:
# its threads' stacks are printed (gdb, when installed) and the test fails,
# rather than waiting for meson's timeout with nothing said.
reap () {  # PID
    local i tracer inspect
    for ((i = 0; i < 600; i++)); do
        case $(proc_state "$1") in ''|Z) wait "$1" 2>/dev/null || true; return 0 ;; esac
        our_child "$1" || return 0
        sleep 0.05
    done
    echo "FAIL: $1 ($(tr '\0' ' ' < "/proc/$1/cmdline")) still running 30 s after SIGTERM" >&2 || true
    if command -v gdb > /dev/null; then
        # A sanitizer build's leak check traces the process: then its
        # tracer's stack says where the stop stands.
        inspect=$1
        tracer=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || tracer=
        if [ "${tracer:-0}" != 0 ]; then
            echo "$1 is traced by $tracer ($(tr '\0' ' ' < "/proc/$tracer/cmdline"))" >&2 || true
            inspect=$tracer
        fi
        gdb -p "$inspect" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' >&2 || true
    else
        grep -H . /proc/"$1"/task/*/wchan >&2 || true
    fi
    kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    REAP_FAILED=1
}

# SIGCONT for a peer that a failed test left stopped (SIGSTOP), which would
# never act on its SIGTERM.  Only for one in a job-control stop (state T):
# a SIGCONT discards a pending SIGSTOP, and a sanitizer build's process
# that is exiting is being stopped by its LeakSanitizer (PTRACE_ATTACH
# sends one), which then waits for that stop forever.
wake_stopped () {  # PID
    [ "$(proc_state "$1")" != T ] || kill -CONT "$1" 2>/dev/null || true
}

cleanup () {
    local i
    for pid in $PIDS; do our_child "$pid" && kill "$pid" 2>/dev/null && wake_stopped "$pid" || true; done
    for pid in $PIDS; do reap "$pid"; done
    for ((i = ${#CLEANUP_FNS[@]} - 1; i >= 0; i--)); do
        eval "${CLEANUP_FNS[i]}" || true
    done
    sanitizer_check
    rm -rf "$T"
    [ -z "${REAP_FAILED:-}" ] || exit 1
}
trap cleanup EXIT

# Issue 13: sanitizer builds.  tests/meson.build sets FERRY_SANITIZER (the
# b_sanitize value) and the ASAN/UBSAN/LSAN options there; every report a
# process of this test writes goes to $T/sanitizer.PID, and the test fails
# when there is one, whatever the exit codes it expected.
if [ -n "${FERRY_SANITIZER:-}" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T/sanitizer"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T/sanitizer"
    # LeakSanitizer cannot work under ptrace: for `env "${STRACE_ENV[@]}" strace ...`.
    STRACE_ENV=("ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0")
else
    STRACE_ENV=()
fi
sanitizer_check () {
    local f found=
    for f in "$T"/sanitizer.*; do
        [ -e "$f" ] || continue
        # LeakSanitizer's own warning when it cannot stop a thread that is
        # exiting as the process ends (its leak check then goes on): not a
        # finding.  Seen once on a loaded machine; any other line fails.
        if [ -s "$f" ] && ! grep -qv '^==[0-9]*==Unable to get registers from thread [0-9]*\.$' "$f"; then
            echo "note: $(basename "$f"): $(head -n1 "$f")" >&2
            continue
        fi
        echo "FAIL: sanitizer report ($FERRY_SANITIZER) in $(basename "$f"):" >&2
        cat "$f" >&2
        found=1
    done
    [ -z "$found" ] || { rm -rf "$T"; exit 1; }
}
# An RSS limit in KiB, for the build under test.  A sanitizer build's
# shadow memory, redzones, allocator caches and (16 MiB of) quarantine
# double it and add 24 MiB: measured 13 MiB at rest in backpressure (limit
# 8), 29 in forward-16-clients-both-ways (40), 62 in ssh-backpressure (24),
# where libssh allocates per packet.  Still below what an unbounded ferry
# would hold in backpressure (32 MiB queued).  Only the limit changes,
# never the data checks.
# A test whose sanitizer figure churns more (ssh-backpressure: 58 to 78
# MiB over runs of one tree) adds SANITIZER_EXTRA.
# Under valgrind (tests/valgrind.sh) RSS says nothing about ferry: 4 GiB.
rss_limit () {  # KIB [SANITIZER_EXTRA_KIB]
    case ${FERRY_SANITIZER:-} in
    '')       echo "$1" ;;
    valgrind) echo 4194304 ;;
    *)        echo $(($1 * 2 + 24576 + ${2:-0})) ;;
    esac
}

fail () { echo "FAIL: $*" >&2; exit 1; }
skip () { echo "SKIP: $*" >&2; exit 77; }
need () { for t in "$@"; do command -v "$t" >/dev/null 2>&1 || skip "$t is not installed"; done; }

# Start a command in the background and remember its PID for cleanup.
# The PID is left in $LAST_PID.
bg () { "$@" & track $!; }
# A background job of this non-interactive shell starts with SIGINT and
# SIGQUIT ignored (POSIX), and ferry leaves a stop signal that was ignored
# when it started alone (ferry(1), SIGNALS): a test that sends them starts its
# ferry as `$DFL "$FERRY" ... &` (env execs it: $! is ferry's PID).
DFL="env --default-signal=INT,QUIT"
# Remember a background job started directly, as in `CMD <fifo >out & track $!`
# (redirections to a FIFO must be done by the job: on `bg` the shell would
# open them itself and block).
track () { LAST_PID=$1; PIDS="$PIDS $1"; }

# Like bg, with stdin from FILE (a plain `bg CMD < FILE` gets /dev/null:
# bash gives background commands an empty stdin unless they redirect it).
bg_stdin () {  # FILE CMD...
    local file=$1; shift
    "$@" < "$file" & track $!
}

wait_for_socket () {  # PATH [PID]: until something (PID, if given) listens
    # on it.  The file appears at bind(), a moment before listen().  ss shows
    # the path the listener bound, which may be PATH's canonical form
    # (/var/run -> /run); and it lists sockets of every mount namespace, so
    # a test whose path is shared with others in their own namespaces (the
    # libvirtd sockets) must name its listener's PID.
    local real owner=${2:+pid=$2,} opts=-Hlx
    # -p costs a scan of every process's fds (about 1 s on a loaded machine):
    # only when the owner matters.
    [ -n "$owner" ] && opts=-Hlxp
    real=$(realpath -m -- "$1")
    for _ in $(seq 200); do
        ss $opts 2>/dev/null | awk -v owner="$owner" 'owner == "" || index($0, owner) { print $5 }' |
            grep -qxF -e "$1" -e "$real" && return 0
        sleep 0.05
    done
    fail "nothing listens on socket $1"
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

# Sample "FUNC PID" every 50 ms while PID lives, keeping the largest number
# it printed in FILE.  Start it with bg; it ends by itself with PID.
track_max () {  # FILE PID FUNC
    local max=0 v
    echo 0 > "$1"
    while kill -0 "$2" 2>/dev/null; do
        v=$("$3" "$2" 2>/dev/null) || v=0
        # A rename, so that a reader never finds the file empty.
        if [ "${v:-0}" -gt "$max" ]; then max=$v; echo "$max" > "$1.new" && mv "$1.new" "$1"; fi
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

# For wait_until: PID holds a connected UNIX socket with unread bytes queued
# (it has stopped reading), or a listener has connections waiting to be
# accepted on PORT, or on the UNIX socket PATH.
has_unread_socket () { ss -Hxp state established | grep -F "pid=$1," | awk '$2 > 0 { f = 1 } END { exit !f }'; }
has_backlog_tcp () { ss -Hltn "sport = :$1" | awk '$2 > 0 { f = 1 } END { exit !f }'; }
has_backlog_unix () { ss -Hlx | awk -v p="$1" '$5 == p && $3 > 0 { f = 1 } END { exit !f }'; }

# For each of SIGTERM, SIGINT and SIGHUP: a relay to ADDRESS (stdin
# /dev/null, under env ENV..., with the FERRY-OPTIONs after a --) gets the
# signal once CONNECTING (a command) says it is still connecting.  It must
# exit with 128 + the signal within 5 s and one line, "stopped by SIG...
# while connecting to ADDRESS"; the next round waits until CONNECTING says
# it is over.
stop_while_connecting () {  # ADDRESS WHAT CONNECTING ENV... [-- FERRY-OPTION...]
    local address=$1 what=$2 connecting=$3 sig pid rc env=()
    shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    for sig in TERM INT HUP; do
        # SIGINT is ignored in a background job unless given back ($DFL).
        $DFL "${env[@]}" "$FERRY" "$@" "$address" < /dev/null 2> "$T/err" &
        pid=$!
        track "$pid"
        wait_until 20 "$connecting"
        kill -"$sig" "$pid"
        rc=0
        wait_exit 5 "$pid" || rc=$?
        assert_eq $((128 + $(kill -l "$sig"))) "$rc" "SIG$sig $what: exit code"
        assert_eq "ferry: stopped by SIG$sig while connecting to $address" "$(cat "$T/err")" \
            "SIG$sig $what: the one line"
        wait_until 10 eval "! $connecting"
    done
}

# A TCP server on 127.0.0.1:PORT that never accepts (backlog 0), already
# holding one queued connection: a connect to it waits in SYN_SENT until
# it gives up.  Needs python3, socat and ss.
hung_tcp_server () {  # PORT
    python3 - "$1" > "$T/hung-$1.ready" <<'PY' & track $!
import socket, sys, time
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", int(sys.argv[1]))); t.listen(0)
print("ready", flush=True)
time.sleep(120)
PY
    wait_until 10 grep -q ready "$T/hung-$1.ready"
    bg socat -u "TCP:127.0.0.1:$1" /dev/null
    wait_until 10 has_backlog_tcp "$1"
}

# True when no socket of PID has unread bytes queued (so PID has read
# everything its peers sent so far).  For wait_until.
recv_queues_empty () {  # PID
    ! ss -xHp | awk -v p="pid=$1," 'index($0, p) && $3 != 0 { found = 1 } END { exit !found }'
}

# Wait until N files match a glob pattern (quoted, e.g. "$T/done.*").
has_files () { [ "$(compgen -G "$1" | wc -l)" -eq "$2" ]; }  # PATTERN N
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

# Re-run the calling test in a private network namespace (only lo, up), so
# it may create interfaces and routes that vanish with it.  Call it first
# thing after sourcing lib.sh; inside, FERRY_TEST_NET_NS=1.
reexec_in_net_ns () {  # ARGS...
    [ -n "${FERRY_TEST_NET_NS:-}" ] && { ip link set lo up; return 0; }
    need unshare ip
    unshare -n true 2>/dev/null || skip "cannot create a network namespace (needs root)"
    trap - EXIT
    rm -rf "$T"
    FERRY_TEST_NET_NS=1 exec unshare -n bash "$0" "$@"
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

# Wait up to SECS for the background process PID to exit and return its exit
# status; fails the test (after killing it) if it is still running.
wait_exit () {  # SECS PID
    local end=$((SECONDS + $1 + 1))
    while kill -0 "$2" 2>/dev/null; do
        if [ "$SECONDS" -ge "$end" ]; then
            kill -9 "$2" 2>/dev/null || true
            fail "process $2 ($(tr '\0' ' ' < "/proc/$2/cmdline" 2>/dev/null)) still running after $1 s"
        fi
        sleep 0.05
    done
    wait "$2"
}

# A FIFO at $T/NAME whose writer stays open and silent until the test ends
# or `kill $LAST_PID`: a stdin that never reaches EOF by itself.
silent_fifo () {  # NAME
    mkfifo "$T/$1"
    bg sh -c 'exec sleep 600 > "$1"' sh "$T/$1"
}

# A FIFO at $T/NAME whose reader stays open but never reads: writes to it
# block once the pipe is full.
deaf_fifo () {  # NAME
    mkfifo "$T/$1"
    bg sh -c 'exec sleep 600 < "$1"' sh "$T/$1"
}

# Wait until a UNIX socket in the abstract namespace (@NAME) listens.
wait_for_abstract () {  # NAME
    for _ in $(seq 100); do
        ss -Hlx | grep -qF "@$1 " && return 0; sleep 0.05
    done
    fail "abstract socket @$1 never appeared"
}

# The CPU time (user + system) of a running process, in clock ticks
# (getconf CLK_TCK per second); rss_kib (above) gives its resident memory.
cpu_ticks () { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }

# The CPU a process uses over the next SECS seconds, in whole percent.
cpu_percent () {  # PID SECS
    local t0 t1
    t0=$(cpu_ticks "$1"); sleep "$2"; t1=$(cpu_ticks "$1")
    awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v s="$2" \
        'BEGIN { printf "%d\n", d * 100 / hz / s }'
}

# Fail unless ferry's exit code and its stderr (a file) are as expected: the
# code, and one line that contains TEXT.
assert_ferry_error () {  # EXPECTED_RC RC STDERR_FILE TEXT
    # The stderr says why, when the code is not the one expected.
    [ "$1" = "$2" ] || fail "ferry exit code: expected '$1', got '$2'; stderr: '$(cat "$3")'"
    assert_contains "$3" "$4" "ferry's message"
}

# Address pairs for a peer and for ferry: sets $SOCAT_LISTEN (socat's listen
# address) and $FERRY_ADDR (ferry's address for the same socket).
listen_addresses () {  # unix|tcp
    case $1 in
    # A test may start one server after another on the same path: each
    # replaces the file, and none removes it on exit (it may be the next's).
    unix) SOCAT_LISTEN="UNIX-LISTEN:$T/s.sock,unlink-early,unlink-close=0"
          FERRY_ADDR="unix:$T/s.sock" ;;
    tcp)  local port; port=$(free_port)
          SOCAT_LISTEN="TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr"
          FERRY_ADDR="tcp:127.0.0.1:$port" ;;
    *)    fail "listen_addresses: unknown family '$1'" ;;
    esac
}

wait_for_listener () {  # unix|tcp [PID]: after listen_addresses
    case $1 in
    unix) wait_for_socket "$T/s.sock" ${2:+"$2"} ;;
    tcp)  wait_for_port "${FERRY_ADDR##*:}" ;;
    esac
}

# Relay SIZE random bytes through ferry to a socat server over a UNIX or TCP
# socket: up (stdin -> server), down (server -> stdout) or both at once.
# The server sends its file while it reads ferry's, and closes once both
# are done; each side's sha256 must match what the other side sent.
bulk_transfer () {  # unix|tcp up|down|both SIZE
    local family=$1 direction=$2 up=$T/empty down=$T/empty rc
    need socat sha256sum
    : > "$T/empty"
    make_data data "$3"  # one random file, sent whichever way(s) it goes
    local data_sum empty_sum up_sum down_sum
    data_sum=$(sha "$T/data") empty_sum=$(sha "$T/empty")
    up_sum=$empty_sum down_sum=$empty_sum
    case $direction in
    up)   up=$T/data up_sum=$data_sum ;;
    down) down=$T/data down_sum=$data_sum ;;
    both) up=$T/data up_sum=$data_sum down=$T/data down_sum=$data_sum ;;
    esac
    listen_addresses "$family"
    bg socat -t 60 "$SOCAT_LISTEN" \
        SYSTEM:"cat '$down' & sha256sum > '$T/server-sum'; wait"
    local server=$LAST_PID
    wait_for_listener "$family"

    cat "$up" | within 90 "$FERRY" "$FERRY_ADDR" | sha256sum > "$T/client-sum"
    rc=${PIPESTATUS[1]}
    assert_eq 0 "$rc" "ferry exit code"
    wait "$server" || fail "socat server exited $?"
    assert_eq "$up_sum" "$(cut -d' ' -f1 "$T/server-sum")" "upload sha256"
    assert_eq "$down_sum" "$(cut -d' ' -f1 "$T/client-sum")" "download sha256"
}

# A socat server that reads everything up to ferry's half-close into
# $T/server-got, then (after DELAY seconds) replies with the file REPLY and
# closes.  socat's -t is raised so that it does not cut a late reply.
reply_server () {  # unix|tcp REPLY [DELAY]
    need socat
    listen_addresses "$1"
    bg socat -t 30 "$SOCAT_LISTEN" \
        SYSTEM:"cat > '$T/server-got'; sleep ${3:-0}; cat '$2'"
    wait_for_listener "$1" "$LAST_PID"
}

# nbdcopy the NBD export on the UNIX socket SOCK to a file directly, and
# again through "$FERRY" ARGS... in nbdcopy's [ CMD ] form (ferry's address
# is added last); the copies must match.  Leaves $T/direct.raw, $T/via.raw.
nbdcopy_through_ferry () {  # SOCK ARGS...
    local sock=$1; shift
    nbdcopy "nbd+unix:///?socket=$sock" "$T/direct.raw"
    within 60 nbdcopy -- [ "$FERRY" "$@" "unix:$sock" ] "$T/via.raw" ||
        fail "nbdcopy through ferry $* failed"
    assert_same_file "$T/direct.raw" "$T/via.raw" "copy through ferry $*"
}

# Half-close exchange over UNIX: UP_BYTES up then stdin EOF; the server reads
# to EOF, waits DELAY seconds, then replies REPLY_BYTES.  Both directions
# must arrive whole, and ferry must exit 0.
half_close_exchange () {  # UP_BYTES REPLY_BYTES DELAY
    local server
    make_data up "$1"
    make_data reply "$2"
    reply_server unix "$T/reply" "$3"
    server=$LAST_PID
    cat "$T/up" | within 30 "$FERRY" "$FERRY_ADDR" | cat > "$T/got"
    assert_eq 0 "${PIPESTATUS[1]}" "ferry exit code"
    wait "$server" || fail "socat server exited $?"
    assert_same_file "$T/up" "$T/server-got" "upload"
    assert_same_file "$T/reply" "$T/got" "reply"
}

# A python3 peer for the end-of-stream scenarios (tests/eos-peer.py; see its
# modes): listen on, or connect to, ADDRESS (ferry's form, e.g. $FERRY_ADDR).
# Started with bg: its PID is in $LAST_PID.
eos_peer () {  # listen|connect ADDRESS MODE ARGS...
    need python3
    bg python3 "$(dirname "${BASH_SOURCE[0]}")/eos-peer.py" "$@"
}

# "BYTES SHA256" of FILE, as eos_peer writes them for what it read.
size_sum () {  # FILE
    echo "$(stat -c %s "$1") $(sha "$1")"
}

# The server sends a 1-byte reply, half-closes (shutdown(SHUT_WR)) and then
# reads to EOF, while 64 MiB are piped into ferry: the server must get all
# of it and ferry must exit 0 with the reply on stdout.  Then the same
# through ferry -l LISTEN TARGET, with a client (eos-peer, sending while it
# reads) as the uploader: the server's half-close is passed on to the client,
# the client's to the server.
half_close_peer_first () {  # unix|tcp
    local family=$1 rc forwarder
    make_data up $((64 * 1024 * 1024))
    printf x > "$T/reply"
    listen_addresses "$family"
    eos_peer listen "$FERRY_ADDR" half-close-first "$T/reply" "$T/server-got"
    local server=$LAST_PID
    wait_for_listener "$family" "$server"
    cat "$T/up" | within 60 "$FERRY" "$FERRY_ADDR" > "$T/got" 2> "$T/err" ||
        fail "ferry exited $? after the server's half-close: $(cat "$T/err")"
    wait_exit 10 "$server" || fail "server exited $?"
    assert_eq "$(size_sum "$T/up")" "$(cat "$T/server-got")" "upload after the server's half-close"
    assert_eq x "$(cat "$T/got")" "reply"

    rm -f "$T/server-got"
    eos_peer listen "$FERRY_ADDR" half-close-first "$T/reply" "$T/server-got"
    server=$LAST_PID
    wait_for_listener "$family" "$server"
    bg "$FERRY" -l "unix:$T/fwd.sock" "$FERRY_ADDR"
    forwarder=$LAST_PID
    wait_for_socket "$T/fwd.sock" "$forwarder"
    eos_peer connect "unix:$T/fwd.sock" both "$T/up" "$T/client-got"
    wait_exit 60 "$LAST_PID" || fail "client exited $?"
    rc=0; wait_exit 10 "$forwarder" || rc=$?
    assert_eq 0 "$rc" "forwarding ferry's exit code"
    wait_exit 10 "$server" || fail "server exited $?"
    assert_eq "$(size_sum "$T/up")" "$(cat "$T/server-got")" "forwarded upload after the server's half-close"
    assert_eq "$(size_sum "$T/reply")" "$(cat "$T/client-got")" "forwarded reply"
}
