#!/usr/bin/env bash
# The remote stream mode quotes the remote command argument by argument:
# a DST (upload) or SRC (download) with spaces, quotes, $(...), `...`, ';'
# and '&' reaches the remote ferry as one literal argument and runs
# nothing.  libnbd refuses such a URI, so the remote half fails: exit 30
# (the remote half's 20), its message naming the host and the string.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve local memory size=1M
hostile="nbd+unix:///?socket=$T/a b'c\"d\$(touch $T/pwned);e \`touch $T/pwned2\` & f|g \$HOME"
# The helper records its arguments, then is ferry.
cat > "$T/helper" <<HELPER
#!/bin/sh
printf '%s\n' "\$#" > "$T/argc"
printf '%s' "\$1" > "$T/arg1"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"
REMOTE_HELPER=$T/helper

for way in up down; do
    rm -f "$T/argc" "$T/arg1"
    if [ $way = up ]; then
        remote_copy up "$(uri local)" "$hostile"
        option=--nbd-receive
    else
        remote_copy down "$hostile" "$(uri local)"
        option=--nbd-send
    fi
    assert_eq 30 "$REMOTE_RC" "$way: exit code"
    assert_eq "$option=$hostile" "$(cat "$T/arg1")" "$way: the remote half's first argument"
    assert_eq 3 "$(cat "$T/argc")" "$way: the remote half's argument count"
    grep -F "ferry: root@127.0.0.1:$SSHD_PORT: " "$T/remote.err" | grep -qF -- "$hostile" ||
        fail "$way: no remote message naming the host and the string"
done
if [ -e "$T/pwned" ] || [ -e "$T/pwned2" ]; then fail "the remote shell ran part of the name"; fi
