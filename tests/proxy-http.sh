#!/usr/bin/env bash
# --proxy=http:// (CONNECT) through a real tinyproxy on 127.0.0.1, without
# and with BasicAuth: 4 MiB to an echo server and back intact, also as a
# forwarder's TARGET and through nc's -X connect -x; its refusals (407
# without credentials, 401 with wrong ones, 403 for a port it does not
# allow) are one line with its answer, exit 3 (nc: 1).
. "$(dirname "$0")/lib.sh"
need tinyproxy
. "$(dirname "$0")/lib-proxy.sh"

# nc -d reads no stdin and does not half-close: this one sends 4 MiB.
send_port=$(free_port)
bg socat "TCP-LISTEN:$send_port,bind=127.0.0.1,reuseaddr,fork" SYSTEM:"cat '$T/data'"
wait_for_port "$send_port"

# tinyproxy in the foreground (-d) on PORT, with more config lines.
tinyproxy_on () {  # PORT CONFIG-LINE...
    local port=$1
    shift
    {
        printf '%s\n' "Port $port" "Listen 127.0.0.1" "Timeout 60" "MaxClients 8" \
            "LogLevel Warning" "Allow 127.0.0.1" "$@"
    } > "$T/tinyproxy.$port.conf"
    bg tinyproxy -d -c "$T/tinyproxy.$port.conf" > "$T/tinyproxy.$port.log" 2>&1
    wait_for_port "$port"
}

open=$(free_port)
tinyproxy_on "$open"
through "tinyproxy" --no-shutdown --proxy="http://127.0.0.1:$open" "localhost:$echo_port"
through "tinyproxy, HOST PORT" --no-shutdown --proxy="http://127.0.0.1:$open" \
    127.0.0.1 "$echo_port"
through "nc -d -X connect -x" --compat=nc -d -X connect -x "127.0.0.1:$open" \
    localhost "$send_port"
# netcat-openbsd's own nc, the same way: the same bytes, the same exit code.
if command -v nc.openbsd > /dev/null; then
    rc=0
    within 60 nc.openbsd -d -X connect -x "127.0.0.1:$open" localhost "$send_port" \
        > "$T/got.nc" || rc=$?
    assert_eq 0 "$rc" "nc.openbsd -d -X connect -x: exit code"
    assert_same_file "$T/data" "$T/got.nc" "nc.openbsd -d -X connect -x"
fi

forwarded "tinyproxy" "http://127.0.0.1:$open"

# Only port 443: CONNECT elsewhere is an access violation.
strict=$(free_port)
tinyproxy_on "$strict" "ConnectPort 443"
refused "tinyproxy ConnectPort 443" 3 \
    "ferry: proxy 127.0.0.1:$strict refused CONNECT localhost:$echo_port: 403 Access violation" \
    --proxy="http://127.0.0.1:$strict" "localhost:$echo_port"

auth=$(free_port)
tinyproxy_on "$auth" "BasicAuth alice s3cr-t"
through "tinyproxy BasicAuth" --no-shutdown --proxy="http://alice:s3cr%2Dt@127.0.0.1:$auth" \
    "localhost:$echo_port"
refused "tinyproxy BasicAuth, no credentials" 3 \
    "ferry: proxy 127.0.0.1:$auth refused CONNECT localhost:$echo_port: 407 Proxy Authentication Required" \
    --proxy="http://127.0.0.1:$auth" "localhost:$echo_port"
# tinyproxy's answer to wrong credentials.
refused "tinyproxy BasicAuth, wrong password" 3 \
    "ferry: proxy 127.0.0.1:$auth refused CONNECT localhost:$echo_port: 401 Unauthorized" \
    --proxy="http://alice:wrong@127.0.0.1:$auth" "localhost:$echo_port"
# nc's -P, as netcat's: no credentials until a 407, then the password is
# asked for on the terminal and sent on a new connection.  Without a
# terminal (setsid: no controlling one), the 407 stands.
rc=0
within 20 setsid -w "$FERRY" --compat=nc -d -X connect -x "127.0.0.1:$auth" -P alice \
    localhost "$send_port" > "$T/out" 2> "$T/err" || rc=$?
assert_eq 1 "$rc" "nc -P, no terminal: exit code"
assert_eq "nc: proxy 127.0.0.1:$auth refused CONNECT localhost:$send_port: 407 Proxy Authentication Required" \
    "$(cat "$T/err")" "nc -P, no terminal: message"
# On a pty as its terminal, stdio in files: ANSWER typed at the prompt (or
# SIGTERM sent there).
cat > "$T/on-a-pty.py" <<'PY'
import os, pty, select, signal, sys, time
answer, out, err, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pid, master = pty.fork()
if pid == 0:
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    os.execvp(argv[0], argv)
seen, status, deadline = b"", None, time.monotonic() + 60
while status is None and time.monotonic() < deadline:
    if select.select([master], [], [], 0.1)[0]:
        try:
            seen += os.read(master, 4096)
        except OSError:
            pass
        if seen.endswith(b": "):
            if answer == "SIGTERM":
                os.kill(pid, signal.SIGTERM)
            else:
                os.write(master, answer.encode() + b"\n")
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = os.waitstatus_to_exitcode(st)
print(status)
print(seen.decode(errors="replace").replace("\r", "").strip())
PY
on_a_pty () {  # ANSWER FERRY-ARG...
    local answer=$1; shift
    python3 "$T/on-a-pty.py" "$answer" "$T/got" "$T/err" "$FERRY" "$@" > "$T/pty"
}
on_a_pty s3cr-t --compat=nc -d -X connect -x "127.0.0.1:$auth" -P alice localhost "$send_port"
assert_eq "0
Proxy password for alice@127.0.0.1:$auth:" "$(cat "$T/pty")" "nc -P on a terminal: exit code, the prompt"
assert_same_file "$T/data" "$T/got" "nc -P on a terminal: 4 MiB through"
assert_eq "" "$(cat "$T/err")" "nc -P on a terminal: stderr"
on_a_pty wrong --compat=nc -d -X connect -x "127.0.0.1:$auth" -P alice localhost "$send_port"
assert_eq "1" "$(head -1 "$T/pty")" "nc -P, a wrong password: exit code"
assert_eq "nc: proxy 127.0.0.1:$auth refused CONNECT localhost:$send_port: 401 Unauthorized" \
    "$(cat "$T/err")" "nc -P, a wrong password: message"
on_a_pty SIGTERM --compat=nc -d -X connect -x "127.0.0.1:$auth" -P alice localhost "$send_port"
assert_eq "1" "$(head -1 "$T/pty")" "nc -P, SIGTERM at the prompt: exit code"
assert_eq "nc: stopped by SIGTERM while connecting to tcp:localhost:$send_port" \
    "$(cat "$T/err")" "nc -P, SIGTERM at the prompt: message"
