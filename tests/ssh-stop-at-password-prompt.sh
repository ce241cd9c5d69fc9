#!/usr/bin/env bash
# --ask-password's prompt on the terminal is part of the login: a stop
# signal there ends ferry at once with 128 + the signal and one line, the
# terminal's echo back on (read(2) on the terminal restarted after the
# signal, and ferry waited for Enter).  SIGTERM by kill, SIGINT as the
# terminal sends it for ^C.  The same for the remote stream mode, whose
# signal handler exited there, the echo left off.  The sshd offers password
# authentication, and ferry has no key (no agent, an empty ~/.ssh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need python3
# A Match block: sshd keeps the first value of a global keyword.
start_sshd main /usr/bin:/bin "Match Address 127.0.0.1" "PasswordAuthentication yes"
address=$(ssh_base)/run/x.sock

at_prompt () {  # SIG WHAT ADDRESS FERRY-ARG...
    local sig=$1 what=$2 address=$3; shift 3
    # ferry on a new pty as its controlling terminal; at the prompt, the signal.
    $DFL HOME="$SSH_HOME" SSH_AUTH_SOCK= python3 "$(dirname "$0")/on-a-pty.py" "$sig" \
        "$FERRY" --ask-password "$@" "$address" < /dev/null > "$T/out"
    cat "$T/out" >&2
    assert_eq $((128 + $(kill -l "$sig"))) "$(sed -n 1p "$T/out")" "$what, SIG$sig: exit code"
    assert_eq "echo on" "$(sed -n 2p "$T/out")" "$what, SIG$sig: the terminal's echo"
    assert_eq "ferry: stopped by SIG$sig while connecting to $address" "$(tail -1 "$T/out")" \
        "$what, SIG$sig: the one line"
}
for sig in TERM INT; do
    at_prompt "$sig" relay "$address"
    # The local half waits for the login: no export is opened.
    at_prompt "$sig" "remote stream mode" "$(ssh_base)" --nbd-send="nbd+unix:///?socket=$T/none" \
        --remote-nbd-receive="nbd+unix:///?socket=$T/none"
done
