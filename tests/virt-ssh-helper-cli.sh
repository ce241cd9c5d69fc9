#!/usr/bin/env bash
# ferry as virt-ssh-helper (through a link of that name, and with
# --compat=virt-ssh-helper): libvirt's messages, exit codes 0 and 1 only,
# ?socket= honoured, and a lossless end where libvirt 9.0's helper drops
# the daemon's last reply.
. "$(dirname "$0")/lib.sh"
need socat
ferry_link virt-ssh-helper
H="$T/bin/virt-ssh-helper"

check () {  # EXPECTED-RC EXPECTED-STDERR ARGS...
    local want_rc=$1 want=$2 rc=0; shift 2
    for helper in "$H" "$FERRY --compat=virt-ssh-helper"; do
        rc=0
        within 10 $helper "$@" </dev/null >"$T/out" 2>"$T/err" || rc=$?
        assert_eq "$want_rc" "$rc" "exit code of $helper $*"
        assert_eq "$want" "$(cat "$T/err")" "stderr of $helper $*"
    done
}

check 1 "virt-ssh-helper: unexpected URI transport 'qemu+ssh://host/system'" qemu+ssh://host/system
check 1 "virt-ssh-helper: unexpected URI transport 'qemu://host/system'" qemu://host/system
check 1 "virt-ssh-helper: cannot parse URI transport 'qemu+foo:///system': remote_open: transport in URL not recognised (should be tls|unix|ssh|ext|tcp|libssh2|libssh)" qemu+foo:///system
check 1 "virt-ssh-helper: cannot parse URI transport 'qemu+unix://host/system': using unix socket and remote server 'host' is not supported." qemu+unix://host/system
check 1 "virt-ssh-helper: cannot parse URI transport '$T/x.sock': missing scheme for URI" "$T/x.sock"
check 1 "virt-ssh-helper: unknown remote mode 'fast'" "qemu:///system?mode=fast"
check 1 "virt-ssh-helper: cannot connect to '$T/none.sock': No such file or directory" "qemu:///system?socket=$T/none.sock"
check 1 "virt-ssh-helper: option parsing failed: Unknown option -x" -x qemu:///system

# No URI, or two: the help on stderr, exit 1 (as libvirt's helper).
check 1 "$("$H" --help)"
rc=0; "$H" a:/// b:/// 2>"$T/err" || rc=$?
assert_eq 1 "$rc" "two URIs"
assert_contains "$T/err" "[OPTION…] URI - libvirt socket proxy" "help for two URIs"
assert_eq "virt-ssh-helper (ferry) $("$FERRY" --version | cut -d' ' -f2)" "$("$H" -V)" "-V"

# A daemon that answers after the client's EOF: every byte arrives, exit 0.
make_data up $((4 * 1024 * 1024))
make_data down $((4 * 1024 * 1024))
bg socat -t 30 UNIX-LISTEN:"$T/d.sock" SYSTEM:"cat > '$T/got'; cat '$T/down'"
wait_for_socket "$T/d.sock"
rc=0
within 20 "$H" "qemu:///system?socket=$T/d.sock" < "$T/up" > "$T/out" || rc=$?
assert_eq 0 "$rc" "exit code after a clean end"
wait "$LAST_PID"
assert_same_file "$T/up" "$T/got" "upload"
assert_same_file "$T/down" "$T/out" "reply after EOF"

# -r with ?socket=: the socket given wins (libvirt does the same).
bg socat UNIX-LISTEN:"$T/ro.sock" SYSTEM:"echo ro"
wait_for_socket "$T/ro.sock"
assert_eq ro "$(within 10 "$H" -r "qemu:///system?socket=$T/ro.sock" </dev/null)" "-r with socket="


# Plain ferry: the same URI errors are usage errors (exit 2); -r needs a URI.
rc=0; "$FERRY" qemu+ssh://host/system 2>"$T/err" || rc=$?
assert_eq 2 "$rc" "ferry with an ssh URI"
assert_eq "ferry: unexpected URI transport 'qemu+ssh://host/system'" "$(cat "$T/err")" "ferry with an ssh URI"
rc=0; "$FERRY" -r "$T/x.sock" 2>"$T/err" || rc=$?
assert_eq 2 "$rc" "ferry -r with a path"
assert_eq "ferry: -r/--readonly needs a libvirt URI ADDRESS, not '$T/x.sock'; see 'ferry --help'" "$(cat "$T/err")" "ferry -r with a path"
