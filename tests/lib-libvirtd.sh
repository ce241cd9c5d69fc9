# ferry test library: a private libvirtd.  Source after lib.sh, inside
# reexec_in_mount_ns: the daemon's state directories become tmpfs mounts
# that vanish with the namespace, so the host is never touched.
#
#   start_libvirtd   UNIX sockets only (no TCP/TLS), no authentication,
#                    state on tmpfs; sets LIBVIRTD_PID.
#   start_dir_pool NAME SIZE   a transient "dir" pool on its own tmpfs.
need /usr/sbin/libvirtd virsh

start_libvirtd () {
    [ -n "${FERRY_TEST_MOUNT_NS:-}" ] || fail "start_libvirtd needs reexec_in_mount_ns"
    local d
    for d in /run /var/lib /var/cache /var/log /etc/libvirt; do
        mount -t tmpfs -o mode=755 tmpfs "$d"
    done
    mkdir -p /run/libvirt
    # Debian's QEMU driver refuses to start without its user and group.
    cp /etc/passwd "$T/passwd"; cp /etc/group "$T/group"
    getent passwd libvirt-qemu >/dev/null ||
        echo 'libvirt-qemu:x:64055:64055:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin' >> "$T/passwd"
    getent group libvirt-qemu >/dev/null || echo 'libvirt-qemu:x:64055:' >> "$T/group"
    getent group kvm >/dev/null || echo 'kvm:x:64056:' >> "$T/group"
    mount --bind "$T/passwd" /etc/passwd
    mount --bind "$T/group" /etc/group
    cat > "$T/libvirtd.conf" <<CFG
listen_tls = 0
listen_tcp = 0
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "2:stderr"
CFG
    bg /usr/sbin/libvirtd -f "$T/libvirtd.conf" 2> "$T/libvirtd.log"
    LIBVIRTD_PID=$LAST_PID
    wait_for_socket /var/run/libvirt/libvirt-sock "$LAST_PID"
    wait_for_socket /var/run/libvirt/libvirt-sock-ro "$LAST_PID"
}

start_dir_pool () {  # NAME SIZE
    mkdir -p "$T/pool-$1"
    mount -t tmpfs -o size="$2" tmpfs "$T/pool-$1"
    cleanup_fn umount "$T/pool-$1"
    virsh -q -c qemu:///system pool-create-as "$1" dir --target "$T/pool-$1" >/dev/null
}
