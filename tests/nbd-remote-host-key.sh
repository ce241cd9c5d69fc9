#!/usr/bin/env bash
# The remote stream mode checks the host key as every ssh:// address does:
# an unknown or changed key fails (exit 7) before the remote ferry runs and
# before the local export is even opened.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve src --filter=log memory size=1M logfile="$T/src.log"
serve dst memory size=1M
cat > "$T/helper" <<HELPER
#!/bin/sh
touch "$T/helper-ran"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"
REMOTE_HELPER=$T/helper
name=$(id -un)@127.0.0.1:$SSHD_PORT

: > "$T/unknown"
ssh-keygen -q -t ed25519 -N '' -f "$T/other-ed25519"
echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$T/other-ed25519.pub")" > "$T/changed"
for kind in unknown changed; do
    REMOTE_PARAMS="&known_hosts=$T/$kind"
    remote_copy up "$(uri src)" "$(uri dst)"
    assert_eq 7 "$REMOTE_RC" "$kind key: exit code"
    assert_contains "$T/remote.err" "ferry: host key of $name " "$kind key: message"
    assert_eq 1 "$(wc -l < "$T/remote.err")" "$kind key: one line"
    remote_copy down "$(uri dst)" "$(uri src)"
    assert_eq 7 "$REMOTE_RC" "$kind key, download: exit code"
done
[ ! -e "$T/helper-ran" ] || fail "the remote helper ran"
! grep -q Connect "$T/src.log" || fail "the local export was opened: $(cat "$T/src.log")"
# The same with the right key works.
REMOTE_PARAMS=
remote_copy up "$(uri src)" "$(uri dst)"
assert_eq 0 "$REMOTE_RC" "known key: exit code"
[ -e "$T/helper-ran" ] || fail "the remote helper did not run"
grep -q Connect "$T/src.log" || fail "the local export was not opened"
