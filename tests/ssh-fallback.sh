#!/usr/bin/env bash
# proxy=: a server that refuses forwarding (AllowStreamLocalForwarding no,
# AllowTcpForwarding no) fails proxy=direct with exit 3; proxy=auto falls
# back to exec.  When both fail, both reasons are reported, and a remote
# helper's non-zero exit status becomes ferry's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat

start_sshd noforward /usr/bin:/bin "AllowStreamLocalForwarding no" "AllowTcpForwarding no"
bg socat "UNIX-LISTEN:$T/echo.sock,fork" EXEC:cat
wait_for_socket "$T/echo.sock"
base=$(ssh_base)
name=$(id -un)@127.0.0.1:$SSHD_PORT
refused="Channel opening failure: channel N error (2) open failed"

run () {  # FERRY-ARG...; sets rc, out, err
    rc=0
    out=$(echo ping | ferry_ssh "$@" 2> "$T/err") || rc=$?
    # libssh names its local channel number: not part of the contract.
    err=$(sed 's/channel [0-9]* error/channel N error/' "$T/err")
    printf '%s\n' "$err" > "$T/err"
}

url="$base$T/echo.sock?keyfile=$SSH_KEY"
run "$url&proxy=direct"
assert_eq 3 "$rc" "proxy=direct refused: exit code"
assert_eq "ferry: cannot connect to '$url&proxy=direct': direct-streamlocal channel: $refused (OpenSSH says so both when forwarding is disabled and when nothing listens there)" \
    "$err" "proxy=direct refused: message"

run "$base?tcp=127.0.0.1:9&keyfile=$SSH_KEY&proxy=direct"
assert_eq 3 "$rc" "direct-tcpip refused: exit code"
assert_contains "$T/err" "direct-tcpip channel: Channel opening failure: channel N error (1) open failed" \
    "direct-tcpip refused: message"

run --remote-helper="$FERRY" "$url"
assert_eq "0 ping" "$rc $out" "proxy=auto falls back to exec"
assert_eq "" "$err" "proxy=auto fallback: stderr"

# Both fail: the direct channel is refused, and the helper cannot connect.
missing="$base$T/missing.sock?keyfile=$SSH_KEY"
run --remote-helper="$FERRY" "$missing"
assert_eq 3 "$rc" "both fail: the remote helper's exit status"
assert_eq "ferry: cannot connect to '$T/missing.sock': No such file or directory
ferry: remote command ''$FERRY' 'unix:$T/missing.sock'' on $name exited with status 3 (ferry ran it after the direct channel failed: $refused)" \
    "$err" "both fail: messages"

run --remote-helper="$T/no-such-helper" "$url"
assert_eq 127 "$rc" "missing helper: exit code"
assert_contains "$T/err" "ferry: remote command ''$T/no-such-helper' 'unix:$T/echo.sock'' on $name exited with status 127 (ferry ran it after the direct channel failed: $refused)" \
    "missing helper: message"
