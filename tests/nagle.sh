#!/usr/bin/env bash
# Nagle: 100 request/reply round trips over TCP, each request written to
# ferry in two parts with a small gap.  The server (socat running sed, with
# TCP_NODELAY on its side) replies once it has a whole line.  Were Nagle on
# in ferry, each second part would wait for the delayed ACK of the first
# (about 40 ms): 100 round trips would take about 4 s.  They must finish in
# under 2 s: the issue's one timing requirement.
. "$(dirname "$0")/lib.sh"
need socat sed
listen_addresses tcp
bg socat "$SOCAT_LISTEN,nodelay" EXEC:"sed -u s/^/ok=/"
server=$LAST_PID
wait_for_listener tcp

coproc FERRY_CO { exec "$FERRY" "$FERRY_ADDR"; }
track "$FERRY_CO_PID"
ferry=$FERRY_CO_PID
to_ferry=${FERRY_CO[1]} from_ferry=${FERRY_CO[0]}
exec {gap}<> <(:)  # a pipe nobody writes: `read -t` on it sleeps without a fork

# One round trip first, so that connecting is not timed.
printf 'hello\n' >&"$to_ferry"
read -r -t 10 reply <&"$from_ferry" || fail "no reply to the first request"
assert_eq ok=hello "$reply" "first reply"

# 100 split round trips; prints how many milliseconds they took.
round_trips () {
    local start i reply
    start=$(date +%s%N)
    for i in $(seq 100); do
        printf 'request %d, ' "$i" >&"$to_ferry"
        read -r -t 0.002 -u "$gap" || true
        printf 'second part\n' >&"$to_ferry"
        read -r -t 10 reply <&"$from_ferry" || fail "no reply to request $i"
        [ "$reply" = "ok=request $i, second part" ] || fail "reply $i: '$reply'"
    done
    echo $((($(date +%s%N) - start) / 1000000))
}

# Up to 3 tries: a loaded machine can slow one down, but with Nagle every
# try would wait for 100 delayed ACKs, however idle the machine.
for try in 1 2 3; do
    ms=$(round_trips)
    echo "try $try: 100 split round trips in $ms ms"
    [ "$ms" -lt 2000 ] && break
done

exec {to_ferry}>&-
rc=0; wait_exit 10 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry exit code"
[ "$ms" -lt 2000 ] || fail "100 split round trips took $ms ms, 3 times (over 2 s: Nagle?)"
