# ferry test library: a private sshd on 127.0.0.1.  Source after lib.sh.
#
#   start_sshd NAME PATH   start sshd NAME on a free port; sessions get
#                          PATH (sshd_config SetEnv), so a test decides
#                          which helpers ("nc", "virt-ssh-helper") the
#                          remote side finds.  Sets SSHD_PORT and SSHD_PID.
#   $SSH_CMD               an ssh client command (a small script) that
#                          trusts only the generated host key (pinned in a
#                          known_hosts file), logs in as root with the
#                          generated client key, never asks anything:
#                          "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 COMMAND
#   $SSH_KEY               the client's private key file
#
# Everything lives in $T/ssh and is stopped by PID with the test.
need /usr/sbin/sshd ssh ssh-keygen

SSH_DIR=$T/ssh
SSH_KEY=$SSH_DIR/id_ed25519
SSH_CMD=$SSH_DIR/ssh

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
}

start_sshd () {  # NAME PATH
    local name=$1 path=$2 port cfg
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
SetEnv PATH=$path
LogLevel ERROR
CFG
    echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
    # sshd's privilege separation directory.
    [ -d /run/sshd ] || mkdir -p -m 755 /run/sshd
    bg /usr/sbin/sshd -f "$cfg" -D -e 2>> "$SSH_DIR/sshd-$name.log"
    SSHD_PID=$LAST_PID
    wait_for_port "$port"
    SSHD_PORT=$port
}
