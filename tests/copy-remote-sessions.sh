#!/usr/bin/env bash
# --streams's ssh sessions.  With a key, one session (one TCP connection,
# one sshd) per stream: sshd logs 4 logins for 4 streams, and 9 for 12 (no
# more log in at once than sshd's MaxStartups allows); the copies checked.  A
# server that takes only a password, with --ask-password (a test password
# in an /etc/shadow that only sshd sees): one prompt, one login, and all 4
# streams on its session (-v says so), the copy checked; with MaxSessions 2
# there, the channels are refused before any remote half runs (exit 3, one
# line).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3 openssl
sparse_image "$T/a.img" 64 256
mkdir "$T/far"

logins () {  # NAME: the logins sshd NAME has logged
    grep -c "^Accepted " "$SSH_DIR/sshd-$1.log" || true
}

# A Match block: sshd keeps the first value of a global keyword.
start_sshd keys /usr/bin:/bin "Match Address 127.0.0.1" "LogLevel INFO"
ssh_host_alias testhost
within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" \
    --streams=4 -v "$T/a.img" "testhost:$T/far/keys.img" 2> "$T/keys.err" ||
    fail "key login: $(cat "$T/keys.err")"
cmp "$T/a.img" "$T/far/keys.img" || fail "key login: the copy differs"
assert_eq 4 "$(logins keys)" "key login: sshd's logins"
! grep -q "share another stream's session" "$T/keys.err" || fail "key login: streams shared a session"
# More streams than sshd's MaxStartups lets log in at once: 9 sessions,
# the other streams' channels on them.
within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" \
    --streams=12 -v "$T/a.img" "testhost:$T/far/twelve.img" 2> "$T/twelve.err" ||
    fail "12 streams: $(cat "$T/twelve.err")"
cmp "$T/a.img" "$T/far/twelve.img" || fail "12 streams: the copy differs"
assert_eq 13 "$(logins keys)" "12 streams: sshd's logins (4 before)"
assert_contains "$T/twelve.err" \
    "ferry: root@127.0.0.1:$SSHD_PORT: 3 of 12 streams share another stream's session: at most 8 log in at once beside the first (sshd's MaxStartups)" \
    "12 streams: -v"

# The password's hash in a copy of /etc/shadow, root's line replaced.
password=ferry-test-$$
hash=$(openssl passwd -6 "$password")
sed "s|^root:[^:]*:|root:$hash:|" /etc/shadow > "$T/shadow"
chmod 600 "$T/shadow"

password_copy () {  # NAME DST [ARG...]: a --streams=4 upload that logs in with the password
    local name=$1 dst=$2; shift 2
    # ferry on a new pty as its controlling terminal, the password typed at its prompt.
    env HOME="$SSH_HOME" SSH_AUTH_SOCK= PTY_ANSWER="$password" \
        python3 "$(dirname "$0")/on-a-pty.py" type \
        "$FERRY" copy --remote-helper="$FERRY" --ask-password --streams=4 "$@" "$T/a.img" \
        "$(ssh_base)$dst" < /dev/null > "$T/$name.out"
    cat "$T/$name.out" >&2
}

SSHD_SHADOW=$T/shadow start_sshd password /usr/bin:/bin \
    "Match Address 127.0.0.1" "LogLevel INFO" "PubkeyAuthentication no" "PasswordAuthentication yes" \
    "PermitRootLogin yes"
host=root@127.0.0.1:$SSHD_PORT
password_copy password "$T/far/password.img" -v
assert_eq 0 "$(sed -n 1p "$T/password.out")" "password: exit code"
assert_eq "echo on" "$(sed -n 2p "$T/password.out")" "password: the terminal's echo"
cmp "$T/a.img" "$T/far/password.img" || fail "password: the copy differs"
assert_eq 1 "$(grep -c "password: " "$T/password.out")" "password: prompts"
assert_eq 1 "$(logins password)" "password: sshd's logins"
assert_contains "$T/password.out" \
    "ferry: $host: 3 of 4 streams share another stream's session: the login took answers at the terminal" \
    "password: -v"

SSHD_SHADOW=$T/shadow start_sshd few /usr/bin:/bin "MaxSessions 2" \
    "Match Address 127.0.0.1" "PubkeyAuthentication no" "PasswordAuthentication yes" \
    "PermitRootLogin yes"
host=root@127.0.0.1:$SSHD_PORT
password_copy few "$T/far/few.img"
assert_eq 3 "$(sed -n 1p "$T/few.out")" "MaxSessions 2: exit code"
assert_eq "ferry: $host: cannot open a session channel: " \
    "$(grep -o "^ferry: $host: cannot open a session channel: " "$T/few.out")" "MaxSessions 2: message"
assert_eq 1 "$(grep -c "^ferry: " "$T/few.out")" "MaxSessions 2: one line"
[ ! -e "$T/far/few.img" ] || fail "MaxSessions 2: a remote half ran"
