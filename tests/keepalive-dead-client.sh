#!/usr/bin/env bash
# A client that vanishes without a FIN or RST (its packets are dropped) ends
# its forwarded connection after --keepalive's probes go unanswered, with
# one line that says so, while ferry -l -k keeps accepting.  The client
# lives in a network namespace of its own, joined to the test's (also its
# own) by a veth pair; a blackhole route there drops everything it sends.
. "$(dirname "$0")/lib.sh"
need socat ss ip unshare nsenter
reexec_in_net_ns "$@"

bg unshare -n sleep 600
client_ns=$LAST_PID
# unshare's PID names the new namespace only once it has called unshare(2).
in_own_ns () { [ "$(readlink "/proc/$client_ns/ns/net")" != "$(readlink /proc/self/ns/net)" ]; }
wait_until 10 in_own_ns
in_client () { nsenter -t "$client_ns" -n "$@"; }
ip link add ferry-server type veth peer name ferry-client 2>/dev/null ||
    skip "cannot create a veth pair"
ip link set ferry-client netns "$client_ns"
ip addr add 10.77.0.1/24 dev ferry-server
ip link set ferry-server up
in_client ip addr add 10.77.0.2/24 dev ferry-client
in_client ip link set ferry-client up

bg socat -u UNIX-LISTEN:"$T/target.sock",fork OPEN:/dev/null
wait_for_socket "$T/target.sock"
port=$(free_port)
"$FERRY" -l -k --keepalive 1 "tcp:10.77.0.1:$port" "unix:$T/target.sock" 2> "$T/err" & track $!
ferry=$LAST_PID
wait_for_port "$port"
silent_fifo in
# Not through in_client: $! must be socat itself, for cleanup.
nsenter -t "$client_ns" -n socat -u "TCP:10.77.0.1:$port" "OPEN:$T/in" & track $!
connected () { ss -Htn state established "sport = :$port" | grep -q 10.77.0.2; }
wait_until 10 connected

in_client ip route add blackhole 10.77.0.1/32
# 1 s idle, then 3 probes 1 s apart: gone after about 4 s.
wait_until 15 eval '! connected'
wait_until 5 grep -q "timed out" "$T/err"
assert_eq 1 "$(grep -c . "$T/err")" "lines on stderr: $(cat "$T/err")"
assert_contains "$T/err" "connection 1 on" "the message names the connection"
kill -0 "$ferry" || fail "ferry -k exited with its connection"
