#!/usr/bin/env bash
# Authentication: a key file (keyfile=), an ssh-agent the test starts, and
# ~/.ssh/id_*; a keyfile= that needs a passphrase leaves the login to the
# agent; a wrong key fails with exit 8, naming what the server accepts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat ssh-agent ssh-add

start_sshd main /usr/bin:/bin
bg socat "UNIX-LISTEN:$T/echo.sock,fork" EXEC:cat
wait_for_socket "$T/echo.sock"
url=$(ssh_base)$T/echo.sock

check_echo () {  # WHAT FERRY-COMMAND...
    local what=$1; shift
    out=$(echo "ping $what" | "$@") || fail "$what: ferry exited $?"
    assert_eq "ping $what" "$out" "$what: echo"
}

check_echo keyfile ferry_ssh "$url?keyfile=$SSH_KEY"

bg ssh-agent -D -a "$T/agent.sock" > /dev/null
wait_for_socket "$T/agent.sock"
SSH_AUTH_SOCK=$T/agent.sock ssh-add -q "$SSH_KEY" 2> /dev/null
check_echo agent within 30 env HOME="$SSH_HOME" SSH_AUTH_SOCK="$T/agent.sock" "$FERRY" "$url"
# The same key behind a passphrase: ferry cannot open keyfile=, the agent
# signs.
cp "$SSH_KEY" "$T/locked-key"
ssh-keygen -q -p -N secret -f "$T/locked-key" > /dev/null
check_echo "locked keyfile, agent" within 30 env HOME="$SSH_HOME" SSH_AUTH_SOCK="$T/agent.sock" \
    "$FERRY" "$url?keyfile=$T/locked-key"

cp "$SSH_KEY" "$SSH_HOME/.ssh/id_ed25519"
cp "$SSH_KEY.pub" "$SSH_HOME/.ssh/id_ed25519.pub"
check_echo id_ed25519 ferry_ssh "$url"
rm "$SSH_HOME/.ssh/id_ed25519" "$SSH_HOME/.ssh/id_ed25519.pub"

ssh-keygen -q -t ed25519 -N '' -f "$T/wrong-key"
rc=0
echo ping | ferry_ssh "$url?keyfile=$T/wrong-key" > /dev/null 2> "$T/err" || rc=$?
assert_eq 8 "$rc" "wrong key: exit code"
assert_eq "ferry: ssh authentication to $(id -un)@127.0.0.1:$SSHD_PORT failed: the server accepts publickey; ferry tried keyfile=, the ssh agent, then ~/.ssh/id_* (password and keyboard-interactive only with --ask-password)" \
    "$(cat "$T/err")" "wrong key: message"
