#!/usr/bin/env bash
# The receiver's destination server is gone, first seen by a write on one
# of its connections while the others still wait for their replies: the
# shim makes every TCP send fail with ECONNRESET once the receiver has
# sent N bytes (nbdkit, multi-conn, answers each write after 500 ms).
# The receiver exits 20 naming the lost connection.  Before the fix it
# exited 0 with a third to half of the image written: libnbd queues the
# command whose send fails, refuses the next one, and the pump ended on
# the connection lost without taking it as a failure (three times in CI, after
# nbdkit's kill -9 in nbd-stream-fault-server-gone).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-fault.sh"
need nbdkit
head -c 64M /dev/urandom > "$T/a.img"
"$FERRY" --nbd-send="$T/a.img" > "$T/a.stream"

for n in 1000000 9000000 20000000; do
    # A server each: nbdkit 1.32 may abort on its own assertion when its
    # clients' connections reset mid-reply (raw_send_socket: sock >= 0).
    port=$(free_port)
    bg nbdkit -f -p "$port" -i 127.0.0.1 --filter=delay memory size=1G wdelay=500ms
    wait_for_port "$port"
    set +e
    # In a subshell: this shell reports such an abort of its background
    # job on its own stderr, which is not ferry's.
    (FERRY_FAULT_RATE=0 FERRY_FAULT_ENOMEM=0 FERRY_FAULT_RESET_AFTER=$n \
        within 30 "$T/ferry" --nbd-receive="nbd://127.0.0.1:$port" < "$T/a.stream") 2> "$T/err"
    rc=$?
    set -e
    assert_ferry_error 20 "$rc" "$T/err" "ferry: NBD connection to nbd://127.0.0.1:$port lost: "
    assert_contains "$T/err" "Connection reset by peer" "the reason"
    assert_eq 1 "$(wc -l < "$T/err")" "one line: $(cat "$T/err")"
    echo "reset after $n bytes: $(cat "$T/err")"
done
