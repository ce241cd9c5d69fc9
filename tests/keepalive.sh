#!/usr/bin/env bash
# --keepalive SECS sets SO_KEEPALIVE on every TCP socket ferry relays on (ss
# shows its keepalive timer): the one it connects, and the ones it accepts
# with -l, relayed with stdio or forwarded to a TARGET.  Without it there is
# none.
. "$(dirname "$0")/lib.sh"
need socat ss
silent_fifo in
ss_has () { ss -Htnp state established "$2" | grep -q "pid=$1,"; }  # PID FILTER
# ferry's established socket matching FILTER has a keepalive timer, or
# (with plain) has none.
check_timer () {  # MODE PID FILTER WHAT
    wait_until 10 ss_has "$2" "$3"
    ss -Htnop state established "$3" | grep "pid=$2," > "$T/ss"
    if [ "$1" = --keepalive ]; then
        assert_contains "$T/ss" "timer:(keepalive" "$4 with --keepalive"
    else
        ! grep -q keepalive "$T/ss" || fail "$4: keepalive without --keepalive: $(cat "$T/ss")"
    fi
}
for mode in --keepalive plain; do
    opts=()
    [ "$mode" = --keepalive ] && opts=(--keepalive 30)

    # Connected.
    listen_addresses tcp
    port=${FERRY_ADDR##*:}
    bg socat -u "$SOCAT_LISTEN" OPEN:/dev/null
    server=$LAST_PID
    wait_for_listener tcp
    "$FERRY" "${opts[@]}" "$FERRY_ADDR" < "$T/in" > /dev/null & track $!
    ferry=$LAST_PID
    check_timer "$mode" "$ferry" "dport = :$port" "ferry's connected socket"
    kill "$ferry" "$server"

    # Accepted, relayed with stdio (-l), and forwarded (-l LISTEN TARGET).
    for target in "" "unix:$T/target.sock"; do
        port=$(free_port)
        if [ -n "$target" ]; then
            bg socat -u UNIX-LISTEN:"$T/target.sock",fork OPEN:/dev/null
            server=$LAST_PID
            wait_for_socket "$T/target.sock"
        fi
        "$FERRY" "${opts[@]}" -l "tcp:127.0.0.1:$port" $target < "$T/in" > /dev/null & track $!
        ferry=$LAST_PID
        wait_for_port "$port"
        bg socat -u "TCP:127.0.0.1:$port" "OPEN:$T/in"
        client=$LAST_PID
        check_timer "$mode" "$ferry" "sport = :$port" "ferry's accepted socket${target:+ (forwarded)}"
        kill "$ferry" "$client"
        [ -n "$target" ] && kill "$server"
        wait "$ferry" "$client" 2>/dev/null || true
    done
done
