#!/usr/bin/env bash
# bench/delay-proxy.c's link model (issue 27): with --rate-mbit, every
# connection through it shares one bottleneck per direction.  Two
# connections sending at once through an 80 Mbit/s link with 25 ms each way
# get, while both are busy, a sum within 10% of the rate and each within
# 30% of half of it; every byte arrives intact; a 1-byte round trip takes at
# least the two delays; COUNT-FILE counts every byte delivered each way.
# It checks the proxy's model, not ferry: 80 Mbit/s is far below what even
# a loaded machine relays, and 2 x 12 MiB take about 2.5 s.
. "$(dirname "$0")/lib.sh"
need cc python3 od

bench=$(cd "$(dirname "$0")/../bench" && pwd)
cc -O2 -o "$T/delay-proxy" "$bench/delay-proxy.c"
target=$(free_port) port=$(free_port)
bg "$T/delay-proxy" --rate-mbit 80 "$port" "$target" 25 "$T/count"
wait_for_port "$port"

within 60 python3 - "$port" "$target" > "$T/out" 2> "$T/err" <<'PY' ||
import bisect, hashlib, os, socket, sys, threading, time
port, target = int(sys.argv[1]), int(sys.argv[2])
RATE, DELAY, BULK = 80e6 / 8, 0.025, 12 << 20

def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)

lsock = socket.create_server(("127.0.0.1", target))
got = []          # per bulk connection: (sha256, [(time, bytes so far)])

def sink(conn):
    kind = conn.recv(1)
    if kind == b"P":          # echo every byte back
        conn.sendall(kind)
        while b := conn.recv(65536):
            conn.sendall(b)
        return
    h, n, samples = hashlib.sha256(), 0, []
    while b := conn.recv(65536):
        h.update(b)
        n += len(b)
        samples.append((time.monotonic(), n))
    got.append((h.hexdigest(), samples))

def accept_loop():
    while True:
        c, _ = lsock.accept()
        threading.Thread(target=sink, args=(c,), daemon=True).start()
threading.Thread(target=accept_loop, daemon=True).start()

# Round trips of one byte: at least the two delays.
p = socket.create_connection(("127.0.0.1", port))
p.sendall(b"P")
p.recv(1)
rtts = []
for _ in range(3):
    t0 = time.monotonic()
    p.sendall(b"x")
    if p.recv(1) != b"x":
        fail("the echo returned the wrong byte")
    rtts.append(time.monotonic() - t0)
p.close()
if min(rtts) < 2 * DELAY:
    fail(f"round trip {min(rtts) * 1000:.1f} ms, below the two delays ({2000 * DELAY:.0f} ms)")
if min(rtts) > 2 * DELAY + 1:
    fail(f"round trip {min(rtts) * 1000:.1f} ms, far above the two delays")

# Two bulk senders at once, each its own pattern.
blocks = [os.urandom(1 << 20) for _ in range(2)]
want = sorted(hashlib.sha256(blk * (BULK >> 20)).hexdigest() for blk in blocks)
def send(blk):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"B")
    for _ in range(BULK >> 20):
        s.sendall(blk)
    s.close()
senders = [threading.Thread(target=send, args=(blk,)) for blk in blocks]
for t in senders:
    t.start()
for t in senders:
    t.join()
deadline = time.monotonic() + 30
while len(got) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
if len(got) < 2:
    fail(f"{len(got)} of 2 bulk connections ended")
# The bytes are counted after the "B", which the sink read first.
if sorted(h for h, _ in got) != want:
    fail(f"bulk bytes differ: {[s[-1][1] for _, s in got]} bytes arrived of {BULK} each")

# The window in which both were busy: from 0.25 s after the later first
# byte to the earlier last byte.
a = max(s[0][0] for _, s in got) + 0.25
b = min(s[-1][0] for _, s in got)
if b - a < 1:
    fail(f"both connections were busy together for only {b - a:.2f} s")
def at(samples, t):
    i = bisect.bisect_right([x for x, _ in samples], t)
    return samples[i - 1][1] if i else 0
rates = [(at(s, b) - at(s, a)) / (b - a) for _, s in got]
total = sum(rates)
print(f"rtt {min(rtts) * 1000:.1f} ms; window {b - a:.2f} s; rates {rates[0] / 1e6:.2f} "
      f"{rates[1] / 1e6:.2f} MB/s; sum {total / 1e6:.2f} MB/s of {RATE / 1e6:.2f}")
if abs(total - RATE) > 0.1 * RATE:
    fail(f"the two shared {total / 1e6:.2f} MB/s, not within 10% of the rate {RATE / 1e6:.2f} MB/s")
for r in rates:
    if abs(r - RATE / 2) > 0.3 * RATE / 2:
        fail(f"one connection got {r / 1e6:.2f} MB/s, not within 30% of half the rate")
PY
    fail "$(cat "$T/err")"
cat "$T/out"

# Towards the target: the ping's 4 bytes, and each bulk's "B" and 12 MiB;
# back: the 4 echoed.  The sinks had every byte, so the counts are final.
assert_eq "$((4 + 2 * (1 + 12 * 1048576))) 4" "$(od -An -tu8 "$T/count" | awk '{ print $1, $2 }')" \
    "bytes counted towards the target and back"
