#!/usr/bin/env bash
# Over real ssh: ferry --nbd-send=SRC | ssh -p PORT 127.0.0.1 ferry
# --nbd-receive=DST, with a private sshd on 127.0.0.1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve src sparse-random size=1G seed=23 percent=10
serve dst memory size=1G
within 120 "$FERRY" -v --nbd-send="$(uri src)" 2> "$T/send.err" |
    within 120 "$SSH_CMD" -p "$SSHD_PORT" 127.0.0.1 "'$FERRY' -v --nbd-receive='$(uri dst)'" 2> "$T/recv.err"
rcs=("${PIPESTATUS[@]}")
cat "$T/send.err" "$T/recv.err" >&2
assert_eq "0 0" "${rcs[*]}" "sender and ssh exit codes"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 || fail "the copy over ssh differs"
want=$(independent_digest "$(uri src)")
assert_eq "$want" "$(summary_field "$T/recv.err" digest)" "the remote receiver's digest"
