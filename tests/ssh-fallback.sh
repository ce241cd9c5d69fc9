#!/usr/bin/env bash
# proxy=: a server that refuses forwarding (AllowStreamLocalForwarding no,
# AllowTcpForwarding no) fails proxy=direct with its refusal, exit 3;
# proxy=auto falls back to exec.  When both fail, the refusal is in the
# line that reports it, and a remote helper's non-zero exit status becomes
# ferry's.  OpenSSH 9.2 refuses a disabled direct-tcpip as ADMINISTRATIVELY
# PROHIBITED (1), but a disabled direct-streamlocal as CONNECT_FAILED (2),
# as it refuses a missing socket (ssh-refused).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat

start_sshd noforward /usr/bin:/bin "AllowStreamLocalForwarding no" "AllowTcpForwarding no"
bg socat "UNIX-LISTEN:$T/echo.sock,fork" EXEC:cat
wait_for_socket "$T/echo.sock"
port=$(free_port)
bg socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" EXEC:cat
wait_for_port "$port"
base=$(ssh_base)
name=$(id -un)@127.0.0.1:$SSHD_PORT
refused="the server refused direct-streamlocal to $T/echo.sock: open failed (2)"
tcp_refused="the server refused direct-tcpip to 127.0.0.1:$port: open failed (1)"

run () {  # FERRY-ARG...; sets rc, out, err
    rc=0
    out=$(echo ping | ferry_ssh "$@" 2> "$T/err") || rc=$?
    err=$(cat "$T/err")
}

url="$base$T/echo.sock?keyfile=$SSH_KEY"
tcp_url="$base?tcp=127.0.0.1:$port&keyfile=$SSH_KEY"
run "$url&proxy=direct"
assert_eq 3 "$rc" "proxy=direct refused: exit code"
assert_eq "ferry: $refused" "$err" "proxy=direct refused: message"

run "$tcp_url&proxy=direct"
assert_eq 3 "$rc" "direct-tcpip refused: exit code"
assert_eq "ferry: $tcp_refused" "$err" "direct-tcpip refused: message"

run --remote-helper="$FERRY" "$url"
assert_eq "0 ping" "$rc $out" "proxy=auto falls back to exec"
assert_eq "" "$err" "proxy=auto fallback: stderr"

run --remote-helper="$FERRY" "$tcp_url"
assert_eq "0 ping" "$rc $out" "proxy=auto falls back to exec: direct-tcpip"
assert_eq "" "$err" "proxy=auto fallback, direct-tcpip: stderr"

# Both fail: the direct channel is refused, and the helper cannot connect.
missing="$base$T/missing.sock?keyfile=$SSH_KEY"
run --remote-helper="$FERRY" "$missing"
assert_eq 3 "$rc" "both fail: the remote helper's exit status"
assert_eq "ferry: cannot connect to '$T/missing.sock': No such file or directory
ferry: remote command ''$FERRY' 'unix:$T/missing.sock'' on $name exited with status 3 (ferry ran it after the server refused direct-streamlocal to $T/missing.sock: open failed (2))" \
    "$err" "both fail: messages"

# No helper to fall back on: the refusal, exit 3, and no word from the
# remote shell.
run --remote-helper="$T/no-such-helper" "$url"
assert_eq 3 "$rc" "missing helper: exit code"
assert_eq "ferry: $refused, and it has no '$T/no-such-helper' to run instead" \
    "$err" "missing helper: message"
run "$tcp_url"
assert_eq 3 "$rc" "no ferry on the server: exit code"
assert_eq "ferry: $tcp_refused, and it has no 'ferry' to run instead" \
    "$err" "no ferry on the server: message"
