#!/usr/bin/env python3
"""bench/wire-timeline.py COUNT-FILE [INTERVAL-MS [QUIET-SECONDS]]

The bytes on the wire over time: samples delay-proxy's COUNT-FILE (two
native uint64 counters, the bytes delivered towards TARGET-PORT and back)
every INTERVAL-MS (default 50) and prints one line per interval: the
milliseconds since the first byte, the bytes each way in that interval, and
the totals.  Its header line comes at once, so that a caller can wait for
it before it starts the clock (python3's own start can take longer than a
login's first round trips); then a line "# first byte at EPOCH-SECONDS".
It starts at the first byte and stops once nothing has moved for
QUIET-SECONDS (default 2), or on SIGINT/SIGTERM."""
import signal
import struct
import sys
import time


def read_counts(path):
    with open(path, "rb") as f:
        return struct.unpack("=QQ", f.read(16))


def main():
    if not 2 <= len(sys.argv) <= 4:
        sys.exit(__doc__.strip().splitlines()[0])
    path = sys.argv[1]
    interval = (int(sys.argv[2]) if len(sys.argv) > 2 else 50) / 1000
    quiet = float(sys.argv[3]) if len(sys.argv) > 3 else 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    base = read_counts(path)
    print("ms\tup_bytes\tdown_bytes\tup_total\tdown_total", flush=True)
    last = base
    while last == base:
        time.sleep(0.001)
        last = read_counts(path)
    start = time.monotonic()
    print("# first byte at %.3f" % time.time(), flush=True)
    idle_since = start
    tick = 1
    while True:
        time.sleep(max(0, start + tick * interval - time.monotonic()))
        now = read_counts(path)
        up, down = now[0] - last[0], now[1] - last[1]
        print("%d\t%d\t%d\t%d\t%d" % (tick * interval * 1000, up, down,
                                      now[0] - base[0], now[1] - base[1]), flush=True)
        if up or down:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > quiet:
            return
        last = now
        tick += 1


try:
    main()
except KeyboardInterrupt:
    pass
