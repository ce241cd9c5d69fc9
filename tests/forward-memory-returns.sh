#!/usr/bin/env bash
# A `--no-splice -l -k` forwarder that has relayed waves of 64 parallel
# connections, 2 MiB each way through its ring buffers, gives the memory
# back once none is live: its RSS returns to within 4 MiB of what it was
# after its first connection (glibc's malloc kept the freed 1 MiB rings
# in its arenas: +100 MiB and more).  Every echo is checked.
. "$(dirname "$0")/lib.sh"
need python3
: "${FERRY_LOAD_DRIVER:?}"

# An exact echo (tests/load-driver.c): socat's PIPE ends its closing phase
# after -t 0.5 s, which a loaded machine can outlast with echo still to go.
bg "$FERRY_LOAD_DRIVER" echo "$T/B.sock"
wait_for_socket "$T/B.sock"
bg "$FERRY" --no-splice -l -k "unix:$T/A.sock" "unix:$T/B.sock"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"

cat > "$T/clients.py" <<'PY'
import os, socket, sys, threading
path, n = sys.argv[1], int(sys.argv[2])
data = os.urandom(2 * 1024 * 1024)
bad = []
def client():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    sender = threading.Thread(target=lambda: (s.sendall(data), s.shutdown(socket.SHUT_WR)))
    sender.start()
    got = bytearray()
    while chunk := s.recv(1 << 20):
        got += chunk
    sender.join()
    s.close()
    if got != data:
        bad.append(len(got))
threads = [threading.Thread(target=client) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join()
sys.exit(f"{len(bad)} of {n} echoes differ" if bad else 0)
PY
within 60 python3 "$T/clients.py" "$T/A.sock" 1 || fail "first connection"
wait_until 10 has_sockets "$ferry" 1        # only the listener is left
start=$(rss_kib "$ferry")
peak=0
for wave in 1 2 3; do
    within 60 python3 "$T/clients.py" "$T/A.sock" 64 || fail "wave $wave"
    wait_until 20 has_sockets "$ferry" 1
    sleep 0.2
    now=$(rss_kib "$ferry")
    [ "$now" -gt "$peak" ] && peak=$now
    echo "after wave $wave: RSS $now KiB (start $start KiB)" >&2
done
[ "$peak" -le $((start + 4 * 1024)) ] ||
    fail "RSS after the waves: $peak KiB, $((peak - start)) KiB above the start's $start KiB"
