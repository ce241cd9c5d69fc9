#!/usr/bin/env bash
# SIGTERM that meets a forwarded connection as it ends: the drain that the
# signal queues for the connection must not touch it once its end has been
# reported (a use-after-free: ASan reports it, and a release build with
# glibc's tcache off and MALLOC_PERTURB_ crashes on it).  Each round: a
# client sends, half-closes, reads the echo to EOF and at once SIGTERMs a
# `-l -k` forwarder; then ferry(1)'s `nbdcopy -- [ ferry --nbd unix:SRC ]`,
# whose nbdcopy SIGTERMs ferry as the copy ends.  Every run exits 0.
. "$(dirname "$0")/lib.sh"
need python3
rounds=${FERRY_TEST_ROUNDS:-60}
# Freed memory is scribbled over and not reused at once (no effect under ASan).
export GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165

python3 - "$FERRY" "$T" "$rounds" <<'PY' || fail "a forwarder did not survive SIGTERM at a connection's end"
import os, re, signal, socket, subprocess, sys, threading, time
ferry, t, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])

def echo_server(listener):
    """The target: echo everything up to EOF, then close."""
    while True:
        conn, _ = listener.accept()
        data = bytearray()
        while chunk := conn.recv(65536):
            data += chunk
        conn.sendall(data)
        conn.close()

target = socket.socket(socket.AF_UNIX)
target.bind(f"{t}/B.sock")
target.listen(16)
threading.Thread(target=echo_server, args=(target,), daemon=True).start()
a = f"{t}/A.sock"
ok = re.compile(r"^ferry: stopped by SIGTERM: [01] live connections drained, 0 cut off$")
bad = 0
for i in range(rounds):
    if os.path.exists(a):
        os.unlink(a)
    err = open(f"{t}/err", "w+")
    p = subprocess.Popen([ferry, "-l", "-k", f"unix:{a}", f"unix:{t}/B.sock"], stderr=err)
    s = socket.socket(socket.AF_UNIX)
    for _ in range(400):
        try:
            s.connect(a)
            break
        except OSError:
            time.sleep(0.01)
    s.sendall(b"x" * 65536)
    s.shutdown(socket.SHUT_WR)
    got = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += len(b)
    p.send_signal(signal.SIGTERM)
    s.close()
    rc = p.wait(timeout=30)
    err.seek(0)
    lines = err.read().splitlines()
    if rc != 0 or got != 65536 or not all(ok.match(l) for l in lines):
        bad += 1
        print(f"round {i}: exit {rc}, {got} bytes echoed, stderr: {lines[:5]}", file=sys.stderr)
print(f"{rounds - bad} of {rounds} rounds clean", file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# ferry(1)'s form: nbdcopy SIGTERMs its [ CMD ] when the copy is done.
command -v nbdkit >/dev/null && command -v nbdcopy >/dev/null || exit 0
bg nbdkit -f -U "$T/src.sock" pattern 4M
wait_for_socket "$T/src.sock"
# nbdcopy does not report how its command ended: a wrapper forks ferry
# (LISTEN_PID must be ferry's own pid), hands it nbdcopy's SIGTERM and
# records its exit status.
cat > "$T/wrap.py" <<'PY'
import os, signal, sys
pid = os.fork()
if pid == 0:
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.execv(sys.argv[2], sys.argv[2:])
def forward(signum, frame):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass
signal.signal(signal.SIGTERM, forward)
_, status = os.waitpid(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)}\n")
PY
bad=0
for i in $(seq $((rounds / 3))); do
    rm -f "$T/rc" "$T/dst.raw"
    within 60 nbdcopy -- [ python3 "$T/wrap.py" "$T/rc" "$FERRY" --nbd "unix:$T/src.sock" ] \
        "$T/dst.raw" 2> "$T/nbderr" || fail "nbdcopy round $i failed: $(cat "$T/nbderr")"
    wait_until 10 test -s "$T/rc"
    if [ "$(cat "$T/rc")" != 0 ] || grep -q "Sanitizer\|runtime error" "$T/nbderr"; then
        bad=$((bad + 1))
        echo "nbdcopy round $i: ferry exited $(cat "$T/rc"): $(head -5 "$T/nbderr")" >&2
    fi
done
[ "$bad" = 0 ] || fail "$bad of $((rounds / 3)) nbdcopy rounds: ferry did not exit 0"
