#!/usr/bin/env bash
# --streams's ssh sessions.  By default the streams are channels on one
# session: sshd logs 1 login for 4 streams.  With --session-per-stream and
# a key, a session (a TCP connection, an sshd) per stream: 4 logins for 4
# streams, 9 for 12 (no more log in at once than sshd's MaxStartups
# allows), 4 over IPv6; under MaxStartups 2, the copy completes, some
# streams sharing.  Where the first login took a password
# (a password-only sshd with a test password in an /etc/shadow that only
# it sees) or a key's passphrase, typed at --ask-password's prompt on a
# pty: one prompt, one login, all 4 streams on it (-v says why).  Every
# copy is checked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3 openssl
sparse_image "$T/a.img" 64 256
mkdir "$T/far"

logins () {  # NAME: the logins sshd NAME has logged so far
    grep -c "^Accepted " "$SSH_DIR/sshd-$1.log" || true
}
key_copy () {  # NAME ARG...: an upload to testhost:$T/far/NAME.img, -v into $T/NAME.err
    local name=$1; shift
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" -v \
        "$@" "$T/a.img" "testhost:$T/far/$name.img" 2> "$T/$name.err" ||
        fail "$name: $(cat "$T/$name.err")"
    cmp "$T/a.img" "$T/far/$name.img" || fail "$name: the copy differs"
}

# A Match block: sshd keeps the first value of a global keyword.
start_sshd keys /usr/bin:/bin "Match Address 127.0.0.1" "LogLevel INFO"
ssh_host_alias testhost
host=root@127.0.0.1:$SSHD_PORT
key_copy default --streams=4
assert_eq 1 "$(logins keys)" "default: sshd's logins"
key_copy four --streams=4 --session-per-stream
assert_eq 5 "$(logins keys)" "4 sessions: sshd's logins (1 before)"
! grep -q "share another stream's session" "$T/four.err" || fail "4 sessions: streams shared one"
key_copy twelve --streams=12 --session-per-stream
assert_eq 14 "$(logins keys)" "12 streams: sshd's logins (5 before)"
assert_contains "$T/twelve.err" "ferry: $host: 3 of 12 streams share another stream's session: at most 8 log in after the first (sshd's MaxStartups)" \
    "12 streams: -v"

# Over IPv6 (a config's HostName ::1): the others connect to the first's
# numeric address, a literal that libssh's host option would not take.
# Where there is no IPv6 loopback, this part is left out.
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2> /dev/null; then
    SSHD_IPV6=1 start_sshd v6 /usr/bin:/bin "Match Address 127.0.0.1,::1" "LogLevel INFO"
    cat >> "$SSH_HOME/.ssh/config" <<CONFIG
Host v6host
    HostName ::1
    Port $SSHD_PORT
    User $(id -un)
    IdentityFile $SSH_KEY
CONFIG
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" -v \
        --streams=4 --session-per-stream "$T/a.img" "v6host:$T/far/v6.img" 2> "$T/v6.err" ||
        fail "IPv6: $(cat "$T/v6.err")"
    cmp "$T/a.img" "$T/far/v6.img" || fail "IPv6: the copy differs"
    assert_eq 4 "$(grep -c "^Accepted .* from ::1 " "$SSH_DIR/sshd-v6.log" || true)" "IPv6: sshd's logins from ::1"
fi

start_sshd startups /usr/bin:/bin "MaxStartups 2"
ssh_host_alias testhost
for round in 1 2 3; do
    key_copy "startups-$round" --streams=4 --session-per-stream
done

# The password's hash in a copy of /etc/shadow, root's line replaced.
password=ferry-test-$$
hash=$(openssl passwd -6 "$password")
sed "s|^root:[^:]*:|root:$hash:|" /etc/shadow > "$T/shadow"
chmod 600 "$T/shadow"

prompt_copy () {  # NAME ADDRESS [ARG...]: an upload that logs in at the prompt, on a pty
    local name=$1 address=$2; shift 2
    # ferry on a new pty as its controlling terminal, the answer typed at its prompt.
    env HOME="$SSH_HOME" SSH_AUTH_SOCK= PTY_ANSWER="$password" \
        python3 "$(dirname "$0")/on-a-pty.py" type \
        "$FERRY" copy --remote-helper="$FERRY" --ask-password --streams=4 --session-per-stream \
        -v "$@" "$T/a.img" "$address$T/far/$name.img" < /dev/null > "$T/$name.out"
    cat "$T/$name.out" >&2
    assert_eq 0 "$(sed -n 1p "$T/$name.out")" "$name: exit code"
    assert_eq "echo on" "$(sed -n 2p "$T/$name.out")" "$name: the terminal's echo"
    cmp "$T/a.img" "$T/far/$name.img" || fail "$name: the copy differs"
    assert_contains "$T/$name.out" \
        "ferry: $host: 3 of 4 streams share another stream's session: the login took answers at the terminal" \
        "$name: -v"
}

SSHD_SHADOW=$T/shadow start_sshd password /usr/bin:/bin \
    "Match Address 127.0.0.1" "LogLevel INFO" "PubkeyAuthentication no" \
    "PasswordAuthentication yes" "PermitRootLogin yes"
host=root@127.0.0.1:$SSHD_PORT
prompt_copy password "$(ssh_base)"
assert_eq 1 "$(grep -c "password: " "$T/password.out")" "password: prompts"
assert_eq 1 "$(logins password)" "password: sshd's logins"

# The client key behind a passphrase, as ~/.ssh/id_ed25519 (no agent).
cp "$SSH_KEY" "$SSH_HOME/.ssh/id_ed25519"
ssh-keygen -q -p -N "$password" -f "$SSH_HOME/.ssh/id_ed25519" > /dev/null
start_sshd passphrase /usr/bin:/bin "Match Address 127.0.0.1" "LogLevel INFO"
host=root@127.0.0.1:$SSHD_PORT
prompt_copy passphrase "$(ssh_base)"
assert_eq 1 "$(logins passphrase)" "passphrase: sshd's logins"
