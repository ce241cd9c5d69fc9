#!/usr/bin/env bash
# A sender on nbdcopy's '[ CMD ]' form, SIGKILLed mid-stream, leaves no
# /tmp/libnbdXXXXXX behind: libnbd 1.14 keeps the socket it bound for the
# server (and its directory) until nbd_close, which a killed ferry never
# reaches, so ferry removes both as soon as it is connected.  (Before, each
# .ci/run left one such directory in /tmp.)
. "$(dirname "$0")/lib.sh"
need nbdkit ss
"$FERRY" --nbd-send [ nbdkit -r --filter=delay pattern size=1G rdelay=100ms ] \
    > "$T/out" 2> "$T/err" & track $!
ferry=$!
wait_until 20 test -s "$T/out"            # connected: the header is out
server=$(pgrep -P "$ferry" nbdkit) || fail "no nbdkit child of ferry"
# It outlives a killed ferry, as no longer this shell's child.
cleanup_fn kill "$server"
path=$(ss -Hxlp | awk -v p="pid=$server," 'index($0, p) { print $5; exit }')
case $path in
/tmp/libnbd*/sock) ;;
*) fail "the server's listening socket: '$path'" ;;
esac
[ ! -e "$path" ] || fail "$path is still there once ferry is connected"
[ ! -e "$(dirname "$path")" ] || fail "$(dirname "$path") is still there once ferry is connected"
kill -9 "$ferry"
wait "$ferry" 2> /dev/null || true
[ ! -e "$(dirname "$path")" ] || fail "$(dirname "$path") left behind"
echo "the server listened on $path, removed once connected"
