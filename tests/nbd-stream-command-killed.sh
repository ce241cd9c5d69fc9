#!/usr/bin/env bash
# A sender on nbdcopy's '[ CMD ]' form starts its server itself: listening
# on a socket with an abstract address, so that a ferry SIGKILLed
# mid-stream leaves nothing in /tmp (libnbd 1.14's socket activation bound
# one in a directory of its own there, until an nbd_close that a killed
# ferry never reaches); in a process group of its own, so that a stop
# sent to ferry's group reaches ferry alone, which then ends the server;
# and with /dev/null as its stdout, never the stream on ferry's.
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
@*) ;;
*) fail "the server's listening socket: '$path'" ;;
esac
assert_eq "$server" "$(ps -o pgid= -p "$server" | tr -d ' ')" "the server's process group"
assert_eq /dev/null "$(readlink "/proc/$server/fd/1")" "the server's stdout"
kill -9 "$ferry"
wait "$ferry" 2> /dev/null || true
echo "the server listened on $path, in its own process group"
