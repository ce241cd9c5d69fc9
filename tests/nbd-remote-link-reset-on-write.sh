#!/usr/bin/env bash
# A --streams=1 upload whose ssh link fails first in a write (issue 25,
# item 1): the fault-injection shim makes every send on the session's TCP
# socket fail with ECONNRESET once the local ferry has sent N bytes, while
# its reads go on, so no poll announces the failure before a channel write
# finds it.  The copy ends within 20 s with exit 25 and one line naming the
# host, at every N (the login, the first window, the middle of the copy).
# Before the fix, a session that died in a channel's write, inside the
# session's own dispatch, told no other client: a relay waiting to read the
# channel waited for ever (13 of 60 uploads whose sshd was killed, beside
# two busy loops).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
. "$(dirname "$0")/lib-fault.sh"
start_sshd main /usr/bin:/bin
# Files at both ends, no NBD server (nbdkit 1.32 may abort when its client
# goes mid-reply): 256 MiB with 40 MiB of data.
sparse_image "$T/a.img" 256 160
mkdir "$T/far"
host=root@127.0.0.1:$SSHD_PORT
REMOTE_HELPER=$FERRY

for n in 65536 1048576 4194304 16777216 33554432; do
    rm -f "$T/far/b.img"
    start=$SECONDS
    REMOTE_WITHIN=60 FERRY=$T/ferry FERRY_FAULT_RATE=0 FERRY_FAULT_ENOMEM=0 \
        FERRY_FAULT_RESET_AFTER=$n remote_copy up "$T/a.img" "$T/far/b.img" 2> /dev/null
    assert_link_lost "reset after $n bytes" "$start" 20 "$host" ".*Connection reset by peer"
    echo "reset after $n bytes ($((SECONDS - start)) s): $(cat "$T/remote.err")"
done
