#!/usr/bin/env bash
# The real thing: virsh on this host talks to a private libvirtd through a
# private sshd, with ferry as the remote helper under the names libvirt
# runs (virt-ssh-helper for proxy=native, nc for proxy=netcat, whichever
# `which virt-ssh-helper` picks for proxy=auto).  A 64 MiB random volume goes
# up with vol-upload and back with vol-download; cmp proves the bytes.
# pool-list and read-only (-r) connections work too, and no helper is left
# behind under sshd.  Runs in a private mount namespace (lib-libvirtd.sh).
. "$(dirname "$0")/lib.sh"
reexec_in_mount_ns "$@"
need cmp pgrep
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-libvirtd.sh"

size=$((64 * 1024 * 1024))
start_libvirtd
start_dir_pool ferry 200M
ferry_link virt-ssh-helper
ferry_link nc
start_sshd virsh "$T/bin:/usr/bin:/bin"

# The remote side finds ferry under both names.
assert_eq "$T/bin/virt-ssh-helper $T/bin/nc" \
    "$(within 20 "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 'command -v virt-ssh-helper nc' | xargs)" \
    "helpers in the ssh session's PATH"
assert_contains <(within 20 "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 'virt-ssh-helper -V') \
    "virt-ssh-helper (ferry)" "virt-ssh-helper in the session is ferry"
assert_eq "${FERRY_NO_SPLICE:-}" \
    "$(within 20 "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 'echo ${FERRY_NO_SPLICE:-}')" \
    "FERRY_NO_SPLICE in the ssh session"

make_data vol "$size"
virsh -q -c qemu:///system vol-create-as ferry vol "$size" --format raw >/dev/null

uri () {  # PROXY
    echo "qemu+ssh://root@127.0.0.1:$SSHD_PORT/system?keyfile=$SSH_KEY&command=$SSH_CMD&proxy=$1"
}

for proxy in native netcat auto; do
    u=$(uri $proxy)
    within 60 virsh -q -c "$u" vol-upload --pool ferry vol "$T/vol" ||
        fail "vol-upload with proxy=$proxy exited $?"
    rm -f "$T/back"
    within 60 virsh -q -c "$u" vol-download --pool ferry vol "$T/back" ||
        fail "vol-download with proxy=$proxy exited $?"
    cmp "$T/vol" "$T/back" || fail "vol-download with proxy=$proxy returned other bytes"
    cmp "$T/vol" "$T/pool-ferry/vol" || fail "vol-upload with proxy=$proxy stored other bytes"
    # Different bytes for the next round, so a stale volume cannot pass.
    make_data vol "$size"

    within 30 virsh -q -c "$u" pool-list > "$T/pools" || fail "pool-list with proxy=$proxy"
    assert_contains "$T/pools" "ferry" "pool-list with proxy=$proxy"

    # Read-only: reads work, writes are refused by the daemon.
    within 30 virsh -q -r -c "$u" pool-list > "$T/pools" || fail "virsh -r pool-list with proxy=$proxy"
    assert_contains "$T/pools" "ferry" "virsh -r pool-list with proxy=$proxy"
    if within 30 virsh -q -r -c "$u" vol-create-as ferry ro 1M 2> "$T/err"; then
        fail "virsh -r could create a volume with proxy=$proxy"
    fi
    assert_contains "$T/err" "read only access" "virsh -r with proxy=$proxy"
done

# Every session has ended: no helper (or shell) left under sshd.
for _ in $(seq 50); do pgrep -P "$SSHD_PID" >/dev/null || break; sleep 0.1; done
pgrep -P "$SSHD_PID" >/dev/null && fail "processes left under sshd: $(pgrep -a -P "$SSHD_PID")"
true
