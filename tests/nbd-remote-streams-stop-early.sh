#!/usr/bin/env bash
# --streams=2, an upload stopped (SIGTERM) when the second stream has sent
# only its header, and its remote receiver answers (READY) only once the
# local half is gone: the copy still ends within seconds, not after
# --drain-timeout (10 s: the relay stopped reading the channel, and libssh
# held its close behind the remote's unread last line), with 143, each
# half's stop line, and nothing left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve src --filter=delay sparse-random size=384M seed=9 percent=50 rdelay=100ms
serve dst memory size=384M
host=root@127.0.0.1:$SSHD_PORT

# The second remote receiver gets its stream only at the stream's end: it
# keeps the header, and the rest, until the local half has gone.  The
# first header to come is stream 1's: stream 2's local half goes only once
# stream 1's remote receiver has answered.  (dd reads the header's 36
# bytes and no more: head(1) may read ahead, and the STOP record that
# follows the header at the stop must reach the receiver.  A pipeline's
# exec replaces only its subshell: the first helper exits after it.)
cat > "$T/helper" <<HELPER
#!/bin/bash
echo \$\$ >> "$T/remote.pids"
dd bs=36 count=1 iflag=fullblock status=none > "$T/header-\$\$"
if mkdir "$T/first" 2> /dev/null; then
    { cat "$T/header-\$\$"; exec cat; } | exec "$FERRY" "\$@"
    exit
fi
{ touch "$T/header-read"; cat > "$T/rest"
  cat "$T/header-\$\$" "$T/rest"; } | exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"

env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" \
    --nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst)" --streams=2 \
    --request-size=256K --in-flight=256K "$(ssh_base)?keyfile=$SSH_KEY" 2> "$T/err" &
pid=$!
track $pid
wait_until 30 test -e "$T/header-read"
# Well under --drain-timeout's 10 s, with room for a loaded machine.
stop_copy "$pid" "$T/err" 5
! grep -F 'did not end within --drain-timeout' "$T/err" || fail "the drain timeout cut it"
assert_eq 2 "$(grep -c '^ferry: stopped by SIGTERM; the image was sent up to offset ' "$T/err")" \
    "both local halves' stop lines"
# Its local half's STOP record tells it of the stop.
assert_contains "$T/err" "ferry: $host (stream 2): the sender was stopped by SIGTERM; " \
    "the second remote receiver's line"
! pgrep -f -- "--remote-helper=$T/helper" > /dev/null || fail "a local half is left"
gone () { for p in $(cat "$T/remote.pids"); do ! kill -0 "$p" 2> /dev/null || return 1; done; }
wait_until 10 gone
