#!/usr/bin/env bash
# Host key checking: strict by default.  An unknown host fails (exit 7) with
# its SHA256 fingerprint and the exact known_hosts line, even when
# ~/.ssh/config says "StrictHostKeyChecking no"; a changed key or a key of
# another type fails whatever known_hosts_verify says; =ignore accepts an
# unknown host with a warning; =auto records it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat

start_sshd main /usr/bin:/bin
bg socat "UNIX-LISTEN:$T/echo.sock,fork" EXEC:cat
wait_for_socket "$T/echo.sock"
user=$(id -un)
name=$user@127.0.0.1:$SSHD_PORT
fp=$(ssh-keygen -l -E sha256 -f "$SSH_DIR/host_ed25519.pub" | cut -d' ' -f2)
line="[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$SSH_DIR/host_ed25519.pub")"

run () {  # KNOWN-HOSTS-FILE EXTRA-PARAMS; sets rc, out, err
    rc=0
    out=$(echo ping | ferry_ssh "$(ssh_base)$T/echo.sock?keyfile=$SSH_KEY&known_hosts=$1$2" \
          2> "$T/err") || rc=$?
    err=$(cat "$T/err")
}

: > "$T/unknown"
echo "Host *" > "$SSH_HOME/.ssh/config"
echo "  StrictHostKeyChecking no" >> "$SSH_HOME/.ssh/config"
run "$T/unknown" ""
assert_eq 7 "$rc" "unknown host: exit code"
assert_eq "ferry: host key of $name is not known (ssh-ed25519 $fp); if that is the right key, add this line to $T/unknown: $line" \
    "$err" "unknown host: message"
[ -s "$T/unknown" ] && fail "unknown host: known_hosts was written"
# The line from the message is all it takes.
echo "${err##*: }" > "$T/unknown"
run "$T/unknown" ""
assert_eq "0 ping" "$rc $out" "after adding the line"
: > "$SSH_HOME/.ssh/config"

ssh-keygen -q -t ed25519 -N '' -f "$T/other-ed25519"
echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$T/other-ed25519.pub")" > "$T/changed"
ssh-keygen -q -t ecdsa -N '' -f "$T/other-ecdsa"
echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$T/other-ecdsa.pub")" > "$T/other-type"
for verify in "" "&known_hosts_verify=ignore" "&known_hosts_verify=auto"; do
    run "$T/changed" "$verify"
    assert_eq 7 "$rc" "changed key$verify: exit code"
    assert_eq "ferry: host key of $name has CHANGED: the server offers ssh-ed25519 $fp, which is not the key $T/changed holds; someone may be intercepting the connection (if the change is expected, remove the old key from $T/changed)" \
        "$err" "changed key$verify: message"
    run "$T/other-type" "$verify"
    assert_eq 7 "$rc" "key of another type$verify: exit code"
    assert_eq "ferry: host key of $name has CHANGED: the server offers ssh-ed25519 $fp, but $T/other-type holds a key of another type for it; someone may be intercepting the connection (if the change is expected, remove the old key from $T/other-type)" \
        "$err" "key of another type$verify: message"
done

: > "$T/ignore"
run "$T/ignore" "&known_hosts_verify=ignore"
assert_eq "0 ping" "$rc $out" "known_hosts_verify=ignore"
assert_eq "ferry: warning: host key of $name is not known (ssh-ed25519 $fp); connecting anyway (known_hosts_verify=ignore)" \
    "$err" "known_hosts_verify=ignore: warning"
[ -s "$T/ignore" ] && fail "known_hosts_verify=ignore wrote known_hosts"

: > "$T/auto"
run "$T/auto" "&known_hosts_verify=auto"
assert_eq "0 ping" "$rc $out" "known_hosts_verify=auto"
assert_eq "ferry: added the host key of $name (ssh-ed25519 $fp) to $T/auto" \
    "$err" "known_hosts_verify=auto: message"
run "$T/auto" ""
assert_eq "0 ping" "$rc $out" "after known_hosts_verify=auto"
