#!/usr/bin/env bash
# libvirt URIs resolve to the socket libvirt 9.x would use (ferry(1)'s
# LIBVIRT URIS).  Runs in a private mount namespace with a tmpfs over /run, so the
# real /var/run/libvirt paths are used without touching the host.  Socket
# files are fake (bound, not listening): the "cannot connect to 'PATH'"
# message names the path ferry chose.  Where libvirt's own virt-ssh-helper
# is installed, rows it understands (no query: 9.0 ignores it) are
# cross-checked against it.
. "$(dirname "$0")/lib.sh"
reexec_in_mount_ns "$@"
need python3 setpriv

mount -t tmpfs -o mode=755 tmpfs /run
R=/var/run/libvirt
U=/run/user/65534
nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"

# Each row: WHO | SOCKET FILES | FERRY ARGS | EXPECTED SOCKET
# WHO is root, or nobody with an environment (XDG_RUNTIME_DIR=... etc).
table="
root   |                                  | qemu:///system                       | $R/libvirt-sock
root   |                                  | -r qemu:///system                    | $R/libvirt-sock-ro
root   | $R/libvirt-sock                  | qemu:///system                       | $R/libvirt-sock
root   | $R/libvirt-sock $R/virtqemud-sock | qemu:///system                      | $R/virtqemud-sock
root   | $R/virtqemud-sock-ro             | -r qemu:///system                    | $R/virtqemud-sock-ro
root   | $R/virtqemud-sock                | -r qemu:///system                    | $R/libvirt-sock-ro
root   | $R/virtqemud-sock                | qemu+unix:///system                  | $R/virtqemud-sock
root   | $R/virtlxcd-sock                 | lxc:///system                        | $R/virtlxcd-sock
root   | $R/virtqemud-sock                | qemu:///system?mode=legacy           | $R/libvirt-sock
root   |                                  | qemu:///system?mode=direct           | $R/virtqemud-sock
root   | $R/libvirt-sock                  | qemu:///system?mode=auto             | $R/libvirt-sock
root   |                                  | -r qemu:///system?mode=direct        | $R/virtqemud-sock-ro
root   | $R/virtqemud-sock                | qemu:///system?socket=/run/other.sock | /run/other.sock
root   |                                  | qemu:///system?socket=%2Frun%2Fx.sock | /run/x.sock
root   |                                  | qemu:///system?socket=@ferry-uri-test-$$ | @ferry-uri-test-$$
root   | $R/virtqemud-sock                | qemu:///session                      | $R/virtqemud-sock
root   |                                  | -r qemu:///session                   | $R/libvirt-sock-ro
nobody XDG_RUNTIME_DIR=$U |                | qemu:///system                       | $R/libvirt-sock
nobody XDG_RUNTIME_DIR=$U |                | qemu:///session                      | $U/libvirt/libvirt-sock
nobody XDG_RUNTIME_DIR=$U | $U/libvirt/virtqemud-sock | qemu:///session             | $U/libvirt/virtqemud-sock
nobody XDG_RUNTIME_DIR=$U |                | -r qemu:///session                   | $U/libvirt/libvirt-sock
nobody XDG_RUNTIME_DIR=$U |                | test+unix:///default                 | $U/libvirt/libvirt-sock
nobody XDG_RUNTIME_DIR=$U |                | qemu:///session?mode=direct          | $U/libvirt/virtqemud-sock
nobody XDG_RUNTIME_DIR= XDG_CACHE_HOME=/run/cache |  | qemu:///session          | /run/cache/libvirt/libvirt-sock
nobody XDG_RUNTIME_DIR= HOME=/run/home |   | qemu:///session                      | /run/home/.cache/libvirt/libvirt-sock
"

real_helper=$(command -v virt-ssh-helper || true)
case "$real_helper" in *"$T"*|"") real_helper= ;; esac
rows=0 crossed=0
while IFS='|' read -r who files args expected; do
    [ -z "$who$files" ] && continue
    who=$(echo $who) files=$(echo $files) expected=$(echo $expected)
    rm -rf /run/*; mkdir -p /run/user/65534 /run/cache /run/home; chown 65534 /run/user/65534
    fake_socket $files
    chmod -R a+rwX /run
    case "$who" in
        root) run= ;;
        nobody*) run="env -u XDG_RUNTIME_DIR -u XDG_CACHE_HOME ${who#nobody} $nobody" ;;
    esac
    rc=0
    $run "$FERRY" $args </dev/null >/dev/null 2>"$T/err" || rc=$?
    assert_eq 3 "$rc" "exit code of ferry $args ($who)"
    case "$expected" in @*) reason="Connection refused" ;;
        *) reason=$([ -e "$expected" ] && echo "Connection refused" || echo "No such file or directory") ;;
    esac
    assert_eq "ferry: cannot connect to '$expected': $reason" "$(cat "$T/err")" "ferry $args ($who)"
    rows=$((rows + 1))

    # libvirt's helper would autostart a session daemon: LIBVIRT_AUTOSTART=0.
    if [ -n "$real_helper" ] && [ "${args#*\?}" = "$args" ]; then
        rc=0
        $run env LIBVIRT_AUTOSTART=0 "$real_helper" $args </dev/null >/dev/null 2>"$T/real" || rc=$?
        assert_eq 1 "$rc" "exit code of libvirt's virt-ssh-helper $args"
        assert_contains "$T/real" "cannot connect to '$expected'" "libvirt's virt-ssh-helper $args ($who)"
        crossed=$((crossed + 1))
    fi
done <<< "$table"
echo "$rows rows checked, $crossed also against libvirt's virt-ssh-helper"

# A URI reaches a real daemon socket: bytes both ways through a listener.
rm -rf /run/*; mkdir -p $R
make_data up 65536
bg socat -t 30 UNIX-LISTEN:$R/libvirt-sock SYSTEM:'cat > "'"$T"'/got"; echo reply'
wait_for_socket $R/libvirt-sock
out=$(within 10 "$FERRY" qemu:///system < "$T/up")
assert_eq reply "$out" "reply through qemu:///system"
wait "$LAST_PID"
assert_same_file "$T/up" "$T/got" "upload through qemu:///system"

# Session mode never autostarts a daemon: a missing socket is an error at once.
rc=0
within 10 env XDG_RUNTIME_DIR=$U $nobody "$FERRY" qemu:///session </dev/null 2>"$T/err" || rc=$?
assert_eq 3 "$rc" "session without a daemon"
assert_eq "ferry: cannot connect to '$U/libvirt/libvirt-sock': No such file or directory" \
    "$(cat "$T/err")" "session without a daemon"
[ ! -e $U/libvirt ] || fail "ferry created $U/libvirt"
