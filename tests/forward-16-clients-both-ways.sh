#!/usr/bin/env bash
# ferry -l -k A B with 16 concurrent clients, each sending and receiving its
# own stream (32 MiB, or 16: below) at once.  Every stream arrives intact (sha256 of what
# each sender sent == sha256 of what some receiver got, all distinct), and
# ferry's RSS stays under 16 x 2 x buffer size + 8 MiB.
. "$(dirname "$0")/lib.sh"
need socat sha256sum
export T

clients=${FERRY_TEST_CLIENTS:-16}
# 32 MiB each (32 times the buffer) in the plain build; 16 in the
# deferred-unref and sanitizer ones, and under fault injection
# (tests/fault-injection-forward.sh).
mib=${FERRY_TEST_FORWARD_MIB:-$([ -n "${FERRY_TEST_PLAIN:-}" ] && echo 32 || echo 16)}
buffer=$((1024 * 1024))
make_data body $((mib * 1024 * 1024))

# The target: per connection, send a stream starting with a unique line and
# hash what arrives.  Each sender also hashes what it sends.
cat > "$T/serve.sh" <<'SH'
id=$$
{ printf 'server %s\n' "$id"; cat "$T/body"; } |
    tee >(sha256sum | cut -d' ' -f1 > "$T/server-sent.$id")
SH
cat > "$T/target.sh" <<'SH'
bash "$T/serve.sh" &
sha256sum | cut -d' ' -f1 > "$T/server-got.$$"
wait
SH
bg socat -t 120 "UNIX-LISTEN:$T/B.sock,fork,backlog=64" EXEC:"bash $T/target.sh",nofork
wait_for_socket "$T/B.sock"

bg "$FERRY" -v -l -k "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/ferry.err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
bg track_max "$T/rss" "$ferry" rss_kib

client () {  # N
    { printf 'client %02d\n' "$1"; cat "$T/body"; } |
        tee >(sha "-" > "$T/client-sent.$1") |
        socat -t 120 - "UNIX-CONNECT:$T/A.sock" | sha "-" > "$T/client-got.$1"
}
pids=
for i in $(seq "$clients"); do client "$i" & pids="$pids $!"; done
for p in $pids; do wait_exit 120 "$p" || fail "a client failed"; done

# The hashing sides finish a moment after the sockets close.
complete () {
    [ "$(cat "$T"/server-got.* "$T"/server-sent.* "$T"/client-sent.* "$T"/client-got.* |
         grep -c .)" -eq $((4 * clients)) ]
}
wait_until 30 complete

sorted () { cat "$@" | sort; }
assert_eq "$clients" "$(sorted "$T"/client-sent.* | uniq | wc -l)" "distinct upload streams"
assert_eq "$(sorted "$T"/client-sent.*)" "$(sorted "$T"/server-got.*)" "uploads (sha256 per stream)"
assert_eq "$(sorted "$T"/server-sent.*)" "$(sorted "$T"/client-got.*)" "downloads (sha256 per stream)"

kill -TERM "$ferry"
rc=0; wait "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code after SIGTERM with nothing live"
assert_contains "$T/ferry.err" "$clients connections, at most" "ferry -v summary"
peak=$(cat "$T/rss")
limit=$(rss_limit $((clients * 2 * buffer / 1024 + 8 * 1024)))
echo "peak RSS sampled: $peak KiB (limit $limit KiB); ferry says: $(tail -1 "$T/ferry.err")"
[ "$peak" -gt 0 ] || fail "RSS was never sampled"
[ "$peak" -lt "$limit" ] || fail "ferry RSS $peak KiB exceeds $limit KiB"
