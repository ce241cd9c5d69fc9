# ferry test library: a private sshd on 127.0.0.1.  Source after lib.sh.
#
#   start_sshd NAME PATH [CONFIG-LINE...]
#                          start sshd NAME on a free port; sessions get
#                          PATH (sshd_config SetEnv), so a test decides
#                          which helpers ("nc", "virt-ssh-helper") the
#                          remote side finds; CONFIG-LINEs are added to its
#                          sshd_config.  FERRY_NO_SPLICE, when set, reaches
#                          the sessions too (sshd resets the environment),
#                          so a -copy suite run tests the copying path on
#                          the remote side as well.  SHLVL=1 keeps the
#                          machine's ~/.bashrc out of the sessions (bash
#                          run by sshd reads it only at shell level 1; on
#                          this machine it runs pyenv's init, 0.18 s of CPU
#                          a session).  With SSHD_IPV6=1 it listens on
#                          [::1] too, on the same port, pinned as well.
#                          Sets SSHD_PORT and SSHD_PID.  With
#                          SSHD_SHADOW=FILE, sshd runs in a mount namespace
#                          of its own where FILE is /etc/shadow: a password
#                          login for a test, the machine's file untouched.
#   $SSH_CMD               an ssh client command (a small script) that
#                          trusts only the generated host key (pinned in a
#                          known_hosts file), logs in as root with the
#                          generated client key, never asks anything:
#                          "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 COMMAND
#   $SSH_KEY               the client's private key file
#   $SSH_DIR/host_ed25519.pub  the host key every started sshd uses
#   ferry_ssh ARG...       ferry with HOME=$SSH_HOME, whose .ssh holds only
#                          the pinned known_hosts (no keys, empty config;
#                          ferry finds ~/.ssh through $HOME), no ssh-agent,
#                          and a 60 s hang guard
#   ssh_base               ssh://USER@127.0.0.1:$SSHD_PORT for the last sshd
#   ssh_host_alias NAME [PORT]  a Host NAME entry in ferry's ~/.ssh/config
#                          for the last sshd (or PORT), with the client key,
#                          so that NAME:PATH reaches it
#
# Everything lives in $T/ssh and is stopped by PID with the test.
need /usr/sbin/sshd ssh ssh-keygen

SSH_DIR=$T/ssh
SSH_KEY=$SSH_DIR/id_ed25519
SSH_CMD=$SSH_DIR/ssh
SSH_HOME=$T/ssh-home

_sshd_keys () {
    [ -e "$SSH_KEY" ] && return 0
    mkdir -p "$SSH_DIR"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-host -f "$SSH_DIR/host_ed25519"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-client -f "$SSH_KEY"
    cp "$SSH_KEY.pub" "$SSH_DIR/authorized_keys"
    : > "$SSH_DIR/known_hosts"
    cat > "$SSH_DIR/ssh_config" <<CFG
Host *
    User root
    IdentityFile $SSH_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $SSH_DIR/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    BatchMode yes
    LogLevel ERROR
CFG
    printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$SSH_DIR/ssh_config" > "$SSH_CMD"
    chmod +x "$SSH_CMD"
    mkdir -p -m 700 "$SSH_HOME/.ssh"
    : > "$SSH_HOME/.ssh/config"
    ln -s "$SSH_DIR/known_hosts" "$SSH_HOME/.ssh/known_hosts"
}

start_sshd () {  # NAME PATH [CONFIG-LINE...]
    local name=$1 path=$2 port cfg line
    shift 2
    _sshd_keys
    port=$(free_port)
    cfg=$SSH_DIR/sshd-$name.conf
    cat > "$cfg" <<CFG
ListenAddress 127.0.0.1:$port
HostKey $SSH_DIR/host_ed25519
AuthorizedKeysFile $SSH_DIR/authorized_keys
PidFile none
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
X11Forwarding no
PrintMotd no
PrintLastLog no
SetEnv PATH=$path SHLVL=1${FERRY_NO_SPLICE:+ FERRY_NO_SPLICE=$FERRY_NO_SPLICE}
LogLevel ERROR
CFG
    echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
    if [ -n "${SSHD_IPV6:-}" ]; then
        echo "ListenAddress [::1]:$port" >> "$cfg"
        echo "[::1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
    fi
    # Last: a CONFIG-LINE may open a Match block.
    for line in "$@"; do echo "$line" >> "$cfg"; done
    # sshd's privilege separation directory.
    [ -d /run/sshd ] || mkdir -p -m 755 /run/sshd
    if [ -n "${SSHD_SHADOW:-}" ]; then
        need unshare
        # shellcheck disable=SC2016
        bg unshare --mount --propagation private \
            sh -c 'mount --bind "$0" /etc/shadow && exec "$@"' "$SSHD_SHADOW" \
            /usr/sbin/sshd -f "$cfg" -D -e 2>> "$SSH_DIR/sshd-$name.log"
    else
        bg /usr/sbin/sshd -f "$cfg" -D -e 2>> "$SSH_DIR/sshd-$name.log"
    fi
    SSHD_PID=$LAST_PID
    wait_for_port "$port"
    SSHD_PORT=$port
}

ferry_ssh () {
    within 60 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$@"
}

ssh_base () {
    echo "ssh://$(id -un)@127.0.0.1:$SSHD_PORT"
}

ssh_host_alias () {  # NAME [PORT]
    cat >> "$SSH_HOME/.ssh/config" <<CONFIG
Host $1
    HostName 127.0.0.1
    Port ${2:-$SSHD_PORT}
    User $(id -un)
    IdentityFile $SSH_KEY
CONFIG
}

# SIZE bytes each way at once between ferry and a socat server listening on
# SOCAT-ADDRESS (it sends its file while reading ferry's, and closes once both
# are done); check sha256 both ways and ferry's exit code 0.
ssh_bulk_both_ways () {  # SIZE SOCAT-ADDRESS FERRY-ARG...
    local size=$1 listen=$2 server rc p; shift 2
    # A quarter of it in the deferred-unref and sanitizer builds (.ci/run's
    # time): the paths are the same, and ssh's cipher dominates.
    [ -n "${FERRY_TEST_PLAIN:-}" ] || size=$((size / 4))
    make_data up "$size"
    make_data down "$size"
    bg socat -t 60 "$listen" SYSTEM:"cat '$T/down' & cat > '$T/server-got'; wait"
    server=$LAST_PID
    case $listen in
        UNIX-LISTEN:*) wait_for_socket "${listen#UNIX-LISTEN:}" ;;
        TCP-LISTEN:*) p=${listen#TCP-LISTEN:}; wait_for_port "${p%%,*}" ;;
    esac
    cat "$T/up" | within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$@" | cat > "$T/client-got"
    rc=${PIPESTATUS[1]}
    assert_eq 0 "$rc" "ferry exit code"
    wait "$server" || fail "socat server exited $?"
    assert_same_file "$T/up" "$T/server-got" "upload"
    assert_same_file "$T/down" "$T/client-got" "download"
}
