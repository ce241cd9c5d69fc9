#!/usr/bin/env bash
# SIGTERM with live relays: ferry stops accepting, delivers what its
# buffers hold in both directions, half-closes each side, and exits 0 with
# a summary once every relay has drained.
#
# Both peers of each of the 3 relays send 512 KiB, keep their connection
# open, and read nothing for a few seconds: a UNIX socket queues only a
# few hundred KiB, so most of those bytes sit in ferry's buffers at SIGTERM.
. "$(dirname "$0")/lib.sh"
need socat ss

clients=3
export T
make_data down $((512 * 1024))
for i in $(seq "$clients"); do make_data "up.$i" $((512 * 1024)); done
# PEER SEND GOT: send, say so, pause without reading, then read to EOF.
cat > "$T/peer.sh" <<'SH'
cat "$1"; touch "$2.sent"; sleep 4; cat > "$2"; touch "$2.done"
SH
bg socat "UNIX-LISTEN:$T/B.sock,fork" \
    SYSTEM:'exec bash "$T/peer.sh" "$T/down" "$T/server-got.$$"',nofork
wait_for_socket "$T/B.sock"
bg "$FERRY" -l -k "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"

pids=
for i in $(seq "$clients"); do
    within 30 socat "UNIX-CONNECT:$T/A.sock" \
        EXEC:"bash $T/peer.sh $T/up.$i $T/client-got.$i",nofork &
    pids="$pids $!"
done
wait_until 10 has_files "$T/*.sent" $((2 * clients))
wait_until 10 recv_queues_empty "$ferry"
kill -TERM "$ferry"
[ ! -e "$T/A.sock" ] || wait_until 5 [ ! -e "$T/A.sock" ]

rc=0; wait_exit 30 "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after a complete drain"
assert_eq "ferry: stopped by SIGTERM: $clients live connections drained, 0 cut off" \
    "$(cat "$T/err")" "summary"
for p in $pids; do wait "$p" || fail "a client failed"; done
for i in $(seq "$clients"); do
    assert_same_file "$T/down" "$T/client-got.$i" "download to client $i"
done
wait_until 10 has_files "$T/*.done" $((2 * clients))
sorted_sha () { for f in "$@"; do sha "$f"; done | sort; }
assert_eq "$(sorted_sha "$T"/up.*)" "$(sorted_sha "$T"/server-got.?*[0-9])" "uploads (sha256 per connection)"
