#!/usr/bin/env bash
# ferry -l -k under load: 2000 connections, 64 at a time, 4 MiB each way
# (tests/load-driver.c checks every byte of every stream against a pattern
# of its own, through an echo server).  Afterwards ferry's fd count is back
# to its start, and its RSS within 1 MiB of it: memory held for a
# connection is given back when it ends.  The start is taken after a first
# 64 connections, so that the workers' threads and glib's one-time
# allocations are in it.  Under a sanitizer the allocator keeps freed
# memory in quarantine: the RSS is then reported, not asserted.
. "$(dirname "$0")/lib.sh"
: "${FERRY_LOAD_DRIVER:?}"
connections=${LOAD_CONNECTIONS:-2000} parallel=64 bytes=${LOAD_BYTES:-4M}

bg "$FERRY_LOAD_DRIVER" echo "$T/B.sock"
wait_for_socket "$T/B.sock" "$LAST_PID"
bg "$FERRY" -l -k "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/ferry.err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock" "$ferry"

fd_count () { find "/proc/$1/fd" -mindepth 1 | wc -l; }
idle () { has_sockets "$ferry" 1; }  # the listener alone
within 120 "$FERRY_LOAD_DRIVER" clients "$T/A.sock" "$parallel" "$parallel" "$bytes" ||
    fail "warm-up connections failed"
wait_until 30 idle
fds0=$(fd_count "$ferry") rss0=$(rss_kib "$ferry")

within 600 "$FERRY_LOAD_DRIVER" clients "$T/A.sock" "$connections" "$parallel" "$bytes" |
    tee "$T/load.out"
assert_eq 0 "${PIPESTATUS[0]}" "load driver exit code"
assert_contains "$T/load.out" "$connections streams intact" "streams intact"
wait_until 30 idle
fds1=$(fd_count "$ferry") rss1=$(rss_kib "$ferry")
echo "ferry after $connections connections: fds $fds0 -> $fds1, RSS $rss0 -> $rss1 KiB"

assert_eq "$fds0" "$fds1" "fd count after the load"
if [ -n "${FERRY_SANITIZER:-}" ]; then
    echo "RSS not asserted under the sanitizer ($FERRY_SANITIZER)"
else
    [ $((rss1 - rss0)) -le 1024 ] ||
        fail "RSS grew by $((rss1 - rss0)) KiB over the load (from $rss0 KiB), more than 1 MiB"
fi
kill -TERM "$ferry"
rc=0; wait_exit 15 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code after SIGTERM with no connection live"
