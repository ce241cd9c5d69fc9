#!/usr/bin/env bash
# ferry -l -k --max-connections 2 with 5 slow clients at once: all 5 are
# served (the others wait in the backlog rather than being refused), and
# ferry never holds more than 2 relays (1 listener + 2 x 2 sockets).
. "$(dirname "$0")/lib.sh"
need socat

bg socat -t 30 "UNIX-LISTEN:$T/B.sock,fork" EXEC:cat,nofork
wait_for_socket "$T/B.sock"
bg "$FERRY" -l -k --max-connections 2 "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
bg track_max "$T/sockets" "$ferry" socket_count

# Each client waits for its first line to come back before the pause, so
# a relay stays open for at least a second after it was accepted.
cat > "$T/client.sh" <<'SH'
printf '%s start\n' "$1"; read -r line; echo "$line" > "$2"
sleep 1
printf '%s end\n' "$1"; read -r line; echo "$line" >> "$2"
SH
pids=
for i in 1 2 3 4 5; do
    within 30 socat "UNIX-CONNECT:$T/A.sock" \
        EXEC:"bash $T/client.sh client-$i $T/got.$i",nofork &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a client failed"; done
for i in 1 2 3 4 5; do
    assert_eq "client-$i start
client-$i end" "$(cat "$T/got.$i")" "client $i echoed"
done
assert_eq 5 "$(cat "$T/sockets")" "most sockets ferry held (1 listener + 2 relays x 2)"
kill -TERM "$ferry"
rc=0; wait "$ferry" || rc=$?
assert_eq 0 "$rc" "exit code after SIGTERM"
