#!/usr/bin/env bash
# Every signal that ends ferry (SIGTERM, SIGINT, SIGHUP, SIGQUIT) leaves
# the open file descriptions of its stdin and stdout, which it shares with
# its parent (a shell, a pipeline), with the file status flags it found:
# no O_NONBLOCK left behind.  SIGUSR1 prints each direction's statistics
# and ferry carries on.  A `-l` stdio listener, and a forwarder, remove
# their socket files on each signal.
. "$(dirname "$0")/lib.sh"
need python3

$DFL python3 - "$FERRY" "$T" <<'PY' || fail "a signal left ferry's stdio or socket file behind"
import fcntl, os, re, signal, socket, subprocess, sys, time
ferry, t = sys.argv[1], sys.argv[2]
failed = []

def check(cond, what):
    if not cond:
        failed.append(what)
        print(f"FAIL: {what}", file=sys.stderr)

def flags(fd):
    return fcntl.fcntl(fd, fcntl.F_GETFL)

def wait_listening(path):
    for _ in range(400):
        out = subprocess.run(["ss", "-Hlx"], capture_output=True, text=True).stdout
        if f" {path} " in out:
            return
        time.sleep(0.025)
    raise SystemExit(f"nothing listens on {path}")

listener = socket.socket(socket.AF_UNIX)
listener.bind(f"{t}/peer.sock")
listener.listen(8)
for sig in [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1]:
    name = signal.Signals(sig).name
    # The parent keeps both ends of both pipes: the same open file
    # descriptions as ferry's stdin and stdout.
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    before = (flags(in_r), flags(out_w))
    # -v: a clean stop says so, which shows that ferry, not the default
    # action, took the signal.
    p = subprocess.Popen([ferry, "-v", f"unix:{t}/peer.sock"], stdin=in_r, stdout=out_w,
                         stderr=subprocess.PIPE)
    conn, _ = listener.accept()
    os.write(in_w, b"hello")
    check(conn.recv(5) == b"hello", f"{name}: relay")
    check(flags(in_r) & os.O_NONBLOCK, f"{name}: ferry did not set O_NONBLOCK on stdin")
    if sig == signal.SIGUSR1:
        p.send_signal(sig)
        time.sleep(0.5)
        check(p.poll() is None, f"SIGUSR1 ended ferry (exit {p.returncode})")
        p.send_signal(signal.SIGTERM)
    else:
        p.send_signal(sig)
    rc = p.wait(timeout=20)
    err = p.stderr.read().decode()
    after = (flags(in_r), flags(out_w))
    check(after == before, f"{name}: flags of stdin, stdout {before} before, {after} after")
    expect = 131 if sig == signal.SIGQUIT else 0
    check(rc == expect, f"{name}: exit {rc}, expected {expect}: {err}")
    check(re.search(r"^ferry: stopped by SIG", err, re.M), f"{name}: no message: {err!r}")
    if sig == signal.SIGUSR1:
        check(re.search(rf"^ferry: stdin -> {re.escape(t)}/peer.sock: 5 bytes in ", err, re.M),
              f"SIGUSR1: no statistics: {err!r}")
    conn.close()
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)

    # Listeners: a stdio one, and a forwarder.
    for args in [["-l"], ["-l", "-k"], ["-l", "-k", None, f"unix:{t}/peer.sock"]]:
        path = f"{t}/listen.sock"
        argv = [ferry] + [a if a is not None else f"unix:{path}" for a in args]
        if None not in args:
            argv.append(f"unix:{path}")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        wait_listening(path)
        p.send_signal(sig)
        if sig == signal.SIGUSR1:
            time.sleep(0.3)
            check(p.poll() is None, f"SIGUSR1 ended ferry {args}")
            p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=20)
        err = p.stderr.read().decode()
        check(rc == 0, f"{name}: ferry {args} exit {rc}: {err}")
        check(not os.path.exists(path), f"{name}: ferry {args} left {path} behind")
sys.exit(1 if failed else 0)
PY
