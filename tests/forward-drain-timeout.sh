#!/usr/bin/env bash
# SIGTERM while a relay's peers read nothing: after --drain-timeout ferry
# gives up on that relay with one line counting the bytes it drops, and
# exits 143.  A second SIGTERM during the drain gives up on it at once,
# with the same counts, and exits 143.
. "$(dirname "$0")/lib.sh"
need socat ss

export T
make_data data $((512 * 1024))
# PEER SEND: send, then read nothing for a while (well past the 1 s drain
# timeout, even on a loaded machine), then discard.
cat > "$T/peer.sh" <<'SH'
cat "$1"; touch "$2.sent"; sleep 8; cat > /dev/null
SH
bg socat "UNIX-LISTEN:$T/B.sock,fork" SYSTEM:'exec bash "$T/peer.sh" "$T/data" "$T/server"',nofork
wait_for_socket "$T/B.sock"

for round in timeout second-signal; do
    rm -f "$T"/*.sent
    if [ "$round" = timeout ]; then timeout=1; else timeout=30; fi
    # --sndbuf 64K: most of the data stays in ferry's buffers, not in the
    # sockets' (a UNIX socket's default is the 1 MiB buffer size).
    bg "$FERRY" -l -k --sndbuf 64K --drain-timeout "$timeout" "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err"
    ferry=$LAST_PID
    wait_for_socket "$T/A.sock"
    bg socat "UNIX-CONNECT:$T/A.sock" EXEC:"bash $T/peer.sh $T/data $T/client",nofork
    client=$LAST_PID
    wait_until 10 has_files "$T/*.sent" 2
    wait_until 10 recv_queues_empty "$ferry"
    kill -TERM "$ferry"
    [ "$round" = second-signal ] && sleep 0.2 && kill -TERM "$ferry"
    rc=0; wait_exit 10 "$ferry" || rc=$?
    assert_eq 143 "$rc" "exit code ($round)"
    wait "$client" 2>/dev/null || true
    if [ "$round" = timeout ]; then
        grep -qE "^ferry: connection 1 on $T/A.sock: not drained within --drain-timeout 1 s \([0-9]+ bytes buffered for $T/B.sock, [0-9]+ for client not delivered\)$" "$T/err" ||
            fail "drain timeout message: $(cat "$T/err")"
    else
        grep -qE "^ferry: connection 1 on $T/A.sock: stopped by SIGTERM, then SIGTERM \([0-9]+ bytes buffered for $T/B.sock, [0-9]+ for client not delivered\)$" "$T/err" ||
            fail "second signal's message: $(cat "$T/err")"
    fi
    assert_eq "ferry: stopped by SIGTERM: 0 live connections drained, 1 cut off" \
        "$(tail -1 "$T/err")" "summary ($round)"
done
