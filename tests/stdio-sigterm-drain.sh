#!/usr/bin/env bash
# A stdio relay stopped by a signal while both directions hold bytes (the
# socket's peer and stdout's reader are both slow to read):
#  - SIGTERM (and SIGINT, SIGHUP): ferry stops reading, delivers every byte
#    it read within --drain-timeout, and exits 0: the peer receives exactly
#    the bytes ferry took from stdin (the file offset they share says how
#    many), stdout a prefix of what the peer sent;
#  - the peer still reading nothing at --drain-timeout 1: one line with the
#    counts not delivered, and exit 128 + the signal;
#  - a second signal: the same line at once.
. "$(dirname "$0")/lib.sh"
need python3

export T
make_data up $((16 * 1024 * 1024))
make_data down $((16 * 1024 * 1024))
python3 - "$FERRY" "$T" <<'PY' || fail "a signalled stdio relay lost bytes or exited wrongly"
import os, re, signal, socket, subprocess, sys, threading, time
ferry, t = sys.argv[1], sys.argv[2]
up = open(f"{t}/up", "rb").read()
down = open(f"{t}/down", "rb").read()
failed = []

def check(cond, what):
    if not cond:
        failed.append(what)
        print(f"FAIL: {what}", file=sys.stderr)

def peer(listener, delay, peer_got):
    """Send `down` while ferry reads it; read nothing for DELAY s, then to EOF."""
    try:
        conn, _ = listener.accept()
    except OSError:
        peer_got.append(b"")   # ferry never connected
        return
    def send():
        try:
            conn.sendall(down)
        except OSError:
            pass   # ferry stopped reading and closed
    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(delay)
    data = bytearray()
    try:
        while chunk := conn.recv(1 << 20):
            data += chunk
    except ConnectionResetError:
        pass   # after the EOF: ferry closed with bytes of `down` unread
    peer_got.append(bytes(data))
    sender.join()
    conn.close()

def round_(name, signals, delay, drain_timeout, expect_rc, expect_line):
    sock = f"{t}/{name}.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(sock)
    listener.listen(1)
    listener.settimeout(10)
    peer_got = []
    server = threading.Thread(target=peer, args=(listener, delay, peer_got))
    server.start()
    stdin = open(f"{t}/up", "rb")
    args = [ferry, f"unix:{sock}"]
    if drain_timeout is not None:
        args[1:1] = ["--drain-timeout", str(drain_timeout)]
    p = subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Once ferry relays (it read stdin: its handlers are in place; a
    # deferred-unref build on a loaded machine once took over 0.8 s to get
    # there), both directions' buffers fill: nobody reads yet.
    deadline = time.monotonic() + 20
    while os.lseek(stdin.fileno(), 0, os.SEEK_CUR) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.8)
    for i, sig in enumerate(signals):
        if i:
            time.sleep(0.3)
        p.send_signal(sig)
    got = []
    reader = threading.Thread(target=lambda: got.append(p.stdout.read()))
    reader.start()
    start = time.monotonic()
    rc = p.wait(timeout=30)
    took = time.monotonic() - start
    reader.join()
    err = p.stderr.read().decode().splitlines()
    taken = os.lseek(stdin.fileno(), 0, os.SEEK_CUR)
    server.join()
    listener.close()
    check(rc == expect_rc, f"{name}: exit {rc}, expected {expect_rc} (stderr: {err})")
    if expect_line is None:
        check(err == [], f"{name}: stderr {err}, expected none (a clean stop is silent)")
    else:
        check(len(err) == 1 and re.fullmatch(expect_line, err[0]),
              f"{name}: stderr {err}, expected one line like {expect_line}")
    check(0 < len(got[0]) < len(down) and got[0] == down[:len(got[0])],
          f"{name}: stdout got {len(got[0])} bytes, not a part of what the peer sent")
    check(0 < taken < len(up), f"{name}: ferry read {taken} bytes of stdin")
    if expect_rc == 0:
        check(peer_got[0] == up[:taken],
              f"{name}: the peer got {len(peer_got[0])} bytes, ferry read {taken} from stdin")
    print(f"{name}: exit {rc} after {took:.1f} s, {taken} bytes read from stdin, "
          f"{len(got[0])} to stdout: {err}", file=sys.stderr)
    return took

sock_re = re.escape(t) + r"/[a-z-]+\.sock"
# The three stop signals share one path: all of them in the plain build,
# SIGTERM alone in the deferred-unref and sanitizer ones.
stops = [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
if not os.environ.get("FERRY_TEST_PLAIN"):
    stops = stops[:1]
for sig, code in stops:
    name = signal.Signals(sig).name
    round_(f"drained-{name.lower()}", [sig], 2, None, 0, None)
    # The peer reads nothing for 3 s: well past the drain timeout.
    round_(f"timeout-{name.lower()}", [sig], 3, 1, code,
           rf"ferry: stopped by {name}: not delivered within --drain-timeout 1 s "
           rf"\([1-9][0-9]* bytes buffered for {sock_re}, [0-9]+ for stdout not delivered\)")
took = round_("second-signal", [signal.SIGTERM, signal.SIGINT], 4, 30, 143,
              rf"ferry: stopped by SIGTERM, then SIGINT "
              rf"\([1-9][0-9]* bytes buffered for {sock_re}, [0-9]+ for stdout not delivered\)")
check(took < 3, f"a second signal took {took:.1f} s")
sys.exit(1 if failed else 0)
PY
