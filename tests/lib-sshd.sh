# ferry test library: a hermetic sshd on 127.0.0.1, sourced after lib.sh.
#
#   start_sshd NAME [CONFIG-LINE...]   start /usr/sbin/sshd -D -e on a free
#       port with a generated ed25519 host key; sets SSHD_PORT and
#       SSHD_DIR ($T/sshd-NAME, holding host_key.pub, log, known_hosts).
#   The client side is generated once per test:
#       $T/home             a HOME for ferry/ssh: .ssh/known_hosts pins every
#                           started sshd, .ssh/config is empty
#       $T/client-key       the key in every sshd's AuthorizedKeysFile
#   ferry finds ~/.ssh through $HOME (glib): ferry_ssh runs it with that
#   HOME and no agent.
#
# sshd as root needs its privilege separation directory /run/sshd (a
# compiled-in path).  It is created when missing and left in place: it is
# the empty, root-owned directory the openssh-server package expects, and a
# parallel test's sshd may be using it.
[ -x /usr/sbin/sshd ] || skip "openssh-server is not installed"
need ssh-keygen

SSH_HOME=$T/home
CLIENT_KEY=$T/client-key

_sshd_client_setup () {
    [ -f "$CLIENT_KEY" ] && return 0
    mkdir -p "$SSH_HOME/.ssh"
    chmod 700 "$SSH_HOME/.ssh"
    : > "$SSH_HOME/.ssh/config"
    : > "$SSH_HOME/.ssh/known_hosts"
    ssh-keygen -q -t ed25519 -N '' -C ferry-test-client -f "$CLIENT_KEY"
}

start_sshd () {  # NAME [CONFIG-LINE...]
    local name=$1; shift
    _sshd_client_setup
    SSHD_DIR=$T/sshd-$name
    mkdir -p "$SSHD_DIR"
    [ -d /run/sshd ] || mkdir -p -m 755 /run/sshd
    ssh-keygen -q -t ed25519 -N '' -C "ferry-test-$name" -f "$SSHD_DIR/host_key"
    cp "$CLIENT_KEY.pub" "$SSHD_DIR/authorized_keys"
    SSHD_PORT=$(free_port)
    {
        echo "Port $SSHD_PORT"
        echo "ListenAddress 127.0.0.1"
        echo "HostKey $SSHD_DIR/host_key"
        echo "AuthorizedKeysFile $SSHD_DIR/authorized_keys"
        echo "PidFile $SSHD_DIR/sshd.pid"
        echo "PermitRootLogin prohibit-password"
        echo "PasswordAuthentication no"
        echo "KbdInteractiveAuthentication no"
        echo "UsePAM no"
        echo "StrictModes no"
        echo "PrintMotd no"
        echo "LogLevel VERBOSE"
        for line in "$@"; do echo "$line"; done
    } > "$SSHD_DIR/sshd_config"
    bg /usr/sbin/sshd -f "$SSHD_DIR/sshd_config" -D -e 2> "$SSHD_DIR/log"
    SSHD_PID=$LAST_PID
    wait_for_port "$SSHD_PORT"
    # Pin the key, exactly as ssh-keyscan would report it.
    echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$SSHD_DIR/host_key.pub")" \
        >> "$SSH_HOME/.ssh/known_hosts"
}

# ferry with the fixture's HOME and no agent, with a 60 s hang guard.
ferry_ssh () {
    within 60 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$@"
}

# ssh://root@127.0.0.1:PORT (the current user) for the last started sshd.
ssh_base () {
    echo "ssh://$(id -un)@127.0.0.1:$SSHD_PORT"
}

# SIZE bytes each way at once between ferry and a socat server listening on
# SOCAT-ADDRESS (it sends its file while reading ferry's, and closes once both
# are done); check sha256 both ways and ferry's exit code 0.
ssh_bulk_both_ways () {  # SIZE SOCAT-ADDRESS FERRY-ARG...
    local size=$1 listen=$2; shift 2
    make_data up "$size"
    make_data down "$size"
    bg socat -t 60 "$listen" SYSTEM:"cat '$T/down' & cat > '$T/server-got'; wait"
    local server=$LAST_PID
    case $listen in
        UNIX-LISTEN:*) wait_for_socket "${listen#UNIX-LISTEN:}" ;;
        TCP-LISTEN:*) local p=${listen#TCP-LISTEN:}; wait_for_port "${p%%,*}" ;;
    esac
    cat "$T/up" | within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" "$@" | cat > "$T/client-got"
    local rc=${PIPESTATUS[1]}
    assert_eq 0 "$rc" "ferry exit code"
    wait "$server" || fail "socat server exited $?"
    assert_same_file "$T/up" "$T/server-got" "upload"
    assert_same_file "$T/down" "$T/client-got" "download"
}
