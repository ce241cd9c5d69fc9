#!/usr/bin/env bash
# --proxy=socks5:// and socks4:// through real SOCKS servers on 127.0.0.1:
# microsocks (SOCKS5, without and with -u/-P user/password) and dante's
# danted (SOCKS4 and SOCKS5).  4 MiB go to an echo server and back intact;
# the target is a name, "localhost", that the SOCKS5 proxy resolves.  A
# forwarder's TARGET and nc's -x/-X 4/-X 5 go through them too.  Wrong
# credentials, a blocked target and one nobody listens on: the proxy's
# answer, exit 3 (nc: 1).
. "$(dirname "$0")/lib.sh"
need microsocks danted
. "$(dirname "$0")/lib-proxy.sh"

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

forwarded "microsocks" "socks5://127.0.0.1:$ms"

# A proxy on an IPv6 literal, and nc's -x [V6ADDR]:PORT.
ms6=$(free_port)
bg microsocks -i ::1 -p "$ms6" > /dev/null 2>&1
wait_for_port "$ms6"
through "microsocks on [::1]" --no-shutdown --proxy="socks5://[::1]:$ms6" "localhost:$echo_port"
refused "nc -x [::1], closed target" 1 \
    "nc: proxy [::1]:$ms6 refused SOCKS5 CONNECT 127.0.0.1:$closed: connection refused (5)" \
    --compat=nc -x "[::1]:$ms6" 127.0.0.1 "$closed"

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
