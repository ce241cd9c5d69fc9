#!/usr/bin/env bash
# --keepalive SECS sets SO_KEEPALIVE on ferry's TCP connection (ss shows its
# keepalive timer); without it there is none.
. "$(dirname "$0")/lib.sh"
need socat ss
silent_fifo in
ss_has () { ss -Htnp state established "$2" | grep -q "pid=$1,"; }  # PID FILTER
for mode in --keepalive plain; do
    listen_addresses tcp
    port=${FERRY_ADDR##*:}
    bg socat -u "$SOCAT_LISTEN" OPEN:/dev/null
    server=$LAST_PID
    wait_for_listener tcp
    opts=()
    [ "$mode" = --keepalive ] && opts=(--keepalive 30)
    "$FERRY" "${opts[@]}" "$FERRY_ADDR" < "$T/in" > /dev/null & track $!
    ferry=$LAST_PID
    wait_until 10 ss_has "$ferry" "dport = :$port"
    ss -Htnop state established "dport = :$port" | grep "pid=$ferry," > "$T/ss"
    if [ "$mode" = --keepalive ]; then
        assert_contains "$T/ss" "timer:(keepalive" "ferry's socket with --keepalive"
    else
        ! grep -q keepalive "$T/ss" || fail "keepalive without --keepalive: $(cat "$T/ss")"
    fi
    kill "$ferry" "$server"
done
