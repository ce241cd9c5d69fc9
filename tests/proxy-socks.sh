#!/usr/bin/env bash
# --proxy=socks5:// and socks4:// through real SOCKS servers on 127.0.0.1:
# microsocks (SOCKS5, without and with -u/-P user/password) and dante's
# danted (SOCKS4 and SOCKS5).  4 MiB go to an echo server and back intact;
# the target is a name, "localhost", that the SOCKS5 proxy resolves.  A
# forwarder's TARGET and nc's -x/-X 4/-X 5 go through them too.
# microsocks ends both directions at the first EOF, so that ferry's
# half-close after stdin's would cut the echo short: its relays take
# --no-shutdown, and the echo server ends after 4 MiB.  Wrong
# credentials and a target nobody listens on: the proxy's answer, exit 3.
. "$(dirname "$0")/lib.sh"
need socat microsocks danted

size=$((4 * 1024 * 1024))
make_data data $size
echo_port=$(free_port)
bg socat "TCP-LISTEN:$echo_port,bind=127.0.0.1,reuseaddr,fork" SYSTEM:"head -c $size"
wait_for_port "$echo_port"

# Through the proxy FERRY-ARGS name, to the echo server: it comes back whole.
through () {  # WHAT FERRY-ARGS...
    local what=$1 rc=0
    shift
    within 60 "$FERRY" "$@" < "$T/data" > "$T/got" 2> "$T/err" || rc=$?
    assert_eq 0 "$rc" "$what: exit code ($(cat "$T/err"))"
    assert_same_file "$T/data" "$T/got" "$what: echoed through the proxy"
    assert_eq "" "$(cat "$T/err")" "$what: stderr"
}

# Fails with exit RC and exactly LINE.
refused () {  # WHAT RC LINE FERRY-ARGS...
    local what=$1 expected_rc=$2 line=$3 rc=0
    shift 3
    : | within 20 "$FERRY" "$@" > "$T/out" 2> "$T/err" || rc=$?
    assert_eq "$expected_rc" "$rc" "$what: exit code"
    assert_eq "$line" "$(cat "$T/err")" "$what: message"
}

ms=$(free_port)
bg microsocks -i 127.0.0.1 -p "$ms" > /dev/null 2>&1
wait_for_port "$ms"
through "microsocks" --no-shutdown --proxy="socks5://127.0.0.1:$ms" "localhost:$echo_port"
through "microsocks, IPv4 literal" --no-shutdown --proxy="socks5://127.0.0.1:$ms" \
    "tcp:127.0.0.1:$echo_port"
closed=$(free_port)
refused "microsocks, closed target" 3 \
    "ferry: proxy 127.0.0.1:$ms refused SOCKS5 CONNECT localhost:$closed: connection refused (5)" \
    --proxy="socks5://127.0.0.1:$ms" "localhost:$closed"

# A forwarder's TARGET through the proxy: two clients one after the other.
listen=$(free_port)
bg "$FERRY" --no-shutdown --proxy="socks5://127.0.0.1:$ms" \
    -l -k "127.0.0.1:$listen" "localhost:$echo_port" 2> "$T/forwarder.err"
forwarder=$LAST_PID
wait_for_port "$listen"
for i in 1 2; do
    within 60 socat -t 30 - "TCP:127.0.0.1:$listen" < "$T/data" > "$T/got.$i" 2>/dev/null
    assert_same_file "$T/data" "$T/got.$i" "forwarded client $i"
done
kill "$forwarder"; wait "$forwarder" 2>/dev/null || true

msa=$(free_port)
bg microsocks -i 127.0.0.1 -p "$msa" -u alice -P 's3cr:t@' > /dev/null 2>&1
wait_for_port "$msa"
through "microsocks -u/-P" --no-shutdown \
    --proxy="socks5://alice:s3cr%3At%40@127.0.0.1:$msa" "localhost:$echo_port"
refused "microsocks -u/-P, wrong password" 3 \
    "ferry: proxy 127.0.0.1:$msa refused SOCKS5 CONNECT localhost:$echo_port: user/password authentication failed for user 'alice'" \
    --proxy="socks5://alice:wrong@127.0.0.1:$msa" "localhost:$echo_port"
refused "microsocks -u/-P, no user" 3 \
    "ferry: proxy 127.0.0.1:$msa refused SOCKS5 CONNECT localhost:$echo_port: no acceptable authentication method (it may want socks5://USER:PASS@)" \
    --proxy="socks5://127.0.0.1:$msa" "localhost:$echo_port"

dante=$(free_port)
cat > "$T/danted.conf" <<DANTE
logoutput: stderr
internal: 127.0.0.1 port = $dante
external: 127.0.0.1
clientmethod: none
socksmethod: none
client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }
socks pass { from: 127.0.0.0/8 to: 127.0.0.0/8 }
socks block { from: 0.0.0.0/0 to: 0.0.0.0/0 }
DANTE
bg danted -f "$T/danted.conf" -p "$T/danted.pid" -N 1 2> "$T/danted.log"
wait_for_port "$dante"
through "danted SOCKS5" --proxy="socks5://127.0.0.1:$dante" "localhost:$echo_port"
through "danted SOCKS4" --proxy="socks4://127.0.0.1:$dante" "localhost:$echo_port"
through "nc -X 4 -x" --compat=nc -X 4 -x "127.0.0.1:$dante" localhost "$echo_port"
through "nc -x (SOCKS5)" --compat=nc -x "127.0.0.1:$dante" localhost "$echo_port"
through "nc -X 5 -x" --compat=nc -X 5 -x "127.0.0.1:$dante" localhost "$echo_port"
# Its rule lets nothing reach beyond 127.0.0.0/8.
refused "danted SOCKS4, blocked target" 3 \
    "ferry: proxy 127.0.0.1:$dante refused SOCKS4 CONNECT 192.0.2.1:$echo_port: request rejected or failed (91)" \
    --proxy="socks4://127.0.0.1:$dante" "192.0.2.1:$echo_port"
refused "danted SOCKS5, blocked target" 3 \
    "ferry: proxy 127.0.0.1:$dante refused SOCKS5 CONNECT 192.0.2.1:$echo_port: connection not allowed by ruleset (2)" \
    --proxy="socks5://127.0.0.1:$dante" "192.0.2.1:$echo_port"
refused "nc -X 4, blocked target" 1 \
    "nc: proxy 127.0.0.1:$dante refused SOCKS4 CONNECT 192.0.2.1:$echo_port: request rejected or failed (91)" \
    --compat=nc -X 4 -x "127.0.0.1:$dante" 192.0.2.1 "$echo_port"
