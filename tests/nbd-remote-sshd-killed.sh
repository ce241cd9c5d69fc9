#!/usr/bin/env bash
# The sshd session of a remote copy killed at 10 points of the copy, each
# way, with 1 and 4 streams (issue 25): the copy never hangs, and ends with
# exit 25 and exactly one line, which names the host and, for a download,
# how far DST is complete (the offset, or the ranges copied; an upload
# says that it is not known here).  A
# download's DST matches SRC up to the offset it names.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need pkill
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
REMOTE_HELPER=$T/helper
host=root@127.0.0.1:$SSHD_PORT

# The remote ferries have moved POINT x 384 KiB of their streams: then
# kill sshd's processes for the session (the listener stays).
killer () {  # POINT
    wait_until 20 test -s "$T/remote.pids"
    wait_until 20 remote_moved $(($1 * 393216))
    pkill -KILL -P "$SSHD_PID"
}
tries=0
for streams in ${STREAMS_LIST:-1 4}; do
    for way in ${WAYS:-up down}; do
        for point in 1 2 3 4 5 6 7 8 9 10; do
            what="$way, --streams=$streams, point $point"
            slow_exports_alive
            rm -f "$T/remote.pids"
            killer "$point" &
            start=$SECONDS
            if [ $way = up ]; then
                remote_copy up "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K \
                    --streams=$streams 2> /dev/null
            else
                remote_copy down "$(uri src)" "$(uri dst)" --request-size=256K --in-flight=256K \
                    --streams=$streams 2> /dev/null
            fi
            wait $!
            assert_link_lost "$what" "$start" 20 "$host"
            if [ $streams = 4 ] && [ $way = down ]; then
                grep -q "; the streams ended with [0-9]* of [0-9]* ranges copied" "$T/remote.err" ||
                    fail "$what: no ranges in the line: $(cat "$T/remote.err")"
            fi
            if [ $way = up ]; then
                assert_contains "$T/remote.err" "; how far DST on the host is complete went with it" \
                    "$what: DST's state"
            fi
            complete=$(sed -nE 's/.* is complete up to offset ([0-9]+) .*/\1/p' "$T/remote.err")
            if [ $way = down ] && [ $streams = 1 ] && [ -n "$complete" ]; then
                rm -f "$T/src.raw" "$T/dst.raw"
                slow_exports_alive
                nbdcopy "$(uri src)" "$T/src.raw"
                nbdcopy "$(uri dst)" "$T/dst.raw"
                cmp -n "$complete" "$T/src.raw" "$T/dst.raw" || fail "$what: DST differs before offset $complete"
                rm -f "$T/src.raw" "$T/dst.raw"
            fi
            ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null ||
                fail "$what: a local half is left: $(pgrep -af -- "--remote-helper=$T/helper")"
            echo "$what ($((SECONDS - start)) s): $(cat "$T/remote.err")"
            tries=$((tries + 1))
        done
    done
done
echo "$tries copies cut, each one line and exit 25"
