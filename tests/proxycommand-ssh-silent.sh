#!/usr/bin/env bash
# ferry as ssh's ProxyCommand (issue 26): `ssh -o ProxyCommand='ferry %h %p'
# HOST echo hi`, 50 sessions in a row over 127.0.0.1 (as the issue asks;
# 18 to 31 s on this shared machine), then 4 for each other
# form ([%h]:%p, --compat=nc %h %p), to the name localhost, and over ::1
# (all three forms) where sshd can listen there (10 each took about 40 s more of
# .ci/run's time, for the race that the 50 in a row already repeat).
# ssh ends its ProxyCommand with SIGHUP once the session is over, and may
# close the pipes first: every session must print exactly "hi", and ferry
# exit 0 with nothing at all on stderr (it printed "stopped by SIGHUP: ..."
# or "cannot write to stdout: Broken pipe (... 0 buffered bytes not
# delivered)" before).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need python3
forms=('%h %p' '[%h]:%p' '--compat=nc %h %p')
# HOST SESSIONS FORM-INDEX...
# The deferred-unref and sanitizer builds look at what one session does
# (.ci/run's time): 10 in a row, 2 for each other form.
first=50 other=4
[ -n "${FERRY_TEST_PLAIN:-}" ] || first=10 other=2
cases=("127.0.0.1 $first 0" "127.0.0.1 $other 1 2" "localhost $other 0")
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2> /dev/null; then
    cases+=("::1 $other 0 1 2")
    export SSHD_IPV6=1
else
    echo "no IPv6 loopback: 127.0.0.1 only" >&2
fi
start_sshd main /usr/bin:/bin
echo "[localhost]:$SSHD_PORT $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"

# The ProxyCommand: ferry, its stderr in PREFIX.err and its exit status in
# PREFIX.rc (ssh never collects it).  The SIGHUP that ssh sends goes on to
# ferry; this wrapper keeps none of ferry's stdio open.
cat > "$T/proxy.py" <<'PY'
import os, signal, sys
prefix, argv = sys.argv[1], sys.argv[2:]
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
pid = os.fork()
if pid == 0:
    os.dup2(os.open(prefix + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
    os.execv(argv[0], argv)
def pass_on(signum, frame):
    try:
        os.kill(pid, signum)
    except ProcessLookupError:      # ferry was reaped already
        pass
signal.signal(signal.SIGHUP, pass_on)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP})
os.close(0)
os.close(1)
_, status = os.waitpid(pid, 0)
with open(prefix + ".rc", "w") as f:
    f.write("%d\n" % os.waitstatus_to_exitcode(status))
PY

for case in "${cases[@]}"; do
    read -r host sessions indexes <<< "$case"
    for index in $indexes; do
        form=${forms[index]}
        what="$host, ProxyCommand ferry $form"
        dir=$T/sessions/$host/$index
        mkdir -p "$dir"
        started=$SECONDS
        for i in $(seq "$sessions"); do
            proxy="$(printf '%q ' python3 "$T/proxy.py" "$dir/$i" "$FERRY") $form"
            out=$(within 20 "$SSH_CMD" -o ProxyCommand="$proxy" -p "$SSHD_PORT" "$host" \
                  echo hi 2> "$dir/$i.ssh-err") || fail "$what, session $i: ssh exited $?: $(cat "$dir/$i.ssh-err")"
            assert_eq hi "$out" "$what, session $i: stdout"
        done
        # The last wrappers may still be waiting for their ferry.
        for _ in $(seq 200); do has_files "$dir/*.rc" "$sessions" && break; sleep 0.05; done
        for i in $(seq "$sessions"); do
            [ -e "$dir/$i.rc" ] || fail "$what, session $i: no exit code: $(cat "$dir/$i.ssh-err")"
            assert_eq 0 "$(cat "$dir/$i.rc")" "$what, session $i: ferry's exit code"
            assert_eq "" "$(cat "$dir/$i.err")" "$what, session $i: ferry's stderr"
        done
        echo "$what: $sessions sessions in $((SECONDS - started)) s"
    done
done
