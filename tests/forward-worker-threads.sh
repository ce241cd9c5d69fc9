#!/usr/bin/env bash
# ferry -l -k A B runs its relays on worker threads, one per core, each
# connection on the least busy one.  Three connections stay live at once,
# each downloading its own 128 MiB: each arrives intact (sha256), ferry has
# min(3, cores) threads named ferry-worker, and with two or more cores two
# of them did the relaying (CPU time on each).  Once every connection has
# ended, SIGTERM ends ferry with 0 (the workers are joined, not stuck).
. "$(dirname "$0")/lib.sh"
need socat sha256sum
cores=$(nproc)
[ "$cores" -ge 2 ] || skip "one core: a single worker"

make_data body $((128 * 1024 * 1024))
# Each connection gets the body, then stays open until its client leaves,
# so all three are live together.
bg socat -t 600 "UNIX-LISTEN:$T/B.sock,fork" SYSTEM:"cat $T/body; exec cat > /dev/null"
wait_for_socket "$T/B.sock"
bg "$FERRY" -l -k "unix:$T/A.sock" "unix:$T/B.sock"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
silent_fifo in

workers () {
    grep -lx ferry-worker /proc/"$ferry"/task/*/comm 2>/dev/null | sed 's|/comm$||'
}
assert_eq 0 "$(workers | wc -l)" "worker threads before the first connection"

clients=
for i in 1 2 3; do
    socat -t 600 "UNIX-CONNECT:$T/A.sock" STDIO < "$T/in" > "$T/got.$i" & track $!
    clients="$clients $LAST_PID"
    # One at a time, so that each finds the others live.
    arrived () { [ "$(stat -c %s "$T/got.$1")" -eq $((128 * 1024 * 1024)) ]; }
    wait_until 60 arrived "$i"
done
for i in 1 2 3; do assert_same_file "$T/body" "$T/got.$i" "connection $i's download"; done

assert_eq $((cores < 3 ? cores : 3)) "$(workers | wc -l)" "ferry-worker threads for 3 live connections"
busy=0
for task in $(workers); do
    ticks=$(sed 's/.*) //' "$task/stat" | awk '{ print $12 + $13 }')
    echo "$(basename "$task"): $ticks ticks"
    [ "$ticks" -gt 0 ] && busy=$((busy + 1))
done
[ "$busy" -ge 2 ] || fail "only $busy worker thread(s) relayed: connections were not spread"

kill $clients
wait_until 30 has_sockets "$ferry" 1
kill -TERM "$ferry"
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code after SIGTERM with nothing live"
