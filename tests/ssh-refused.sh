#!/usr/bin/env bash
# A direct channel that the server refuses because nothing listens there
# (a missing socket, a closed ?tcp= port) ends with that refusal, exit 3,
# with no ferry on the server's PATH: proxy=auto asks the server for the
# helper before it falls back, so no "ferry: command not found" from its
# shell replaces the cause.  A closed port is never tried through the
# helper (OpenSSH refuses it with CONNECT_FAILED, forwarding being on).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

start_sshd forward /usr/bin:/bin
base=$(ssh_base)
port=$(free_port)

run () {  # FERRY-ARG...; sets rc, out, err
    rc=0
    out=$(echo ping | ferry_ssh "$@" 2> "$T/err") || rc=$?
    err=$(cat "$T/err")
}

for proxy in "" "&proxy=direct"; do
    run "$base/run/none.sock?keyfile=$SSH_KEY$proxy"
    case $proxy in
        "") tail=", and it has no 'ferry' to run instead" ;;
        *) tail= ;;
    esac
    assert_eq "3" "$rc" "missing socket$proxy: exit code"
    assert_eq "ferry: the server refused direct-streamlocal to /run/none.sock: open failed (2)$tail" \
        "$err" "missing socket$proxy: message"
    assert_eq "" "$out" "missing socket$proxy: stdout"

    run "$base?tcp=127.0.0.1:$port&keyfile=$SSH_KEY$proxy"
    assert_eq "3" "$rc" "closed port$proxy: exit code"
    assert_eq "ferry: the server refused direct-tcpip to 127.0.0.1:$port: Connection refused (2)" \
        "$err" "closed port$proxy: message"
done

# The helper given but not there: the same.
run --remote-helper=/no/such/ferry "$base/run/none.sock?keyfile=$SSH_KEY"
assert_eq "3" "$rc" "missing helper: exit code"
assert_eq "ferry: the server refused direct-streamlocal to /run/none.sock: open failed (2), and it has no '/no/such/ferry' to run instead" \
    "$err" "missing helper: message"
