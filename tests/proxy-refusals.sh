#!/usr/bin/env bash
# --proxy against a forged proxy (forged-proxy.py) that refuses or breaks
# each handshake: one line naming the proxy and its answer, exit 3 (nc's
# -X/-x: the same line, exit 1), never a hang.  The SOCKS requests carry
# the target's name for the proxy to resolve (example.test resolves nowhere).
. "$(dirname "$0")/lib.sh"
need python3

# Bytes from stdin as hex, and back.
hex () { od -An -v -tx1 | tr -d ' \n'; }
unhex () { python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read()))'; }

port=$(free_port)
proxy=127.0.0.1:$port
target=example.test:22

# The forged proxy in MODE, writing what it read to $T/MODE.log, and gone.
forged_start () {  # MODE
    bg python3 "$(dirname "$0")/forged-proxy.py" "$port" "$1" "$T/$1.log"
    forged=$LAST_PID
    wait_for_port "$port"
}
forged_stop () { kill "$forged"; wait "$forged" 2>/dev/null || true; }

# MODE URL EXPECTED-LINE [FERRY-OPTION...]
refusal () {
    local mode=$1 url=$2 expected=$3 rc=0
    shift 3
    forged_start "$mode"
    : | within 10 "$FERRY" "$@" --proxy="$url" "$target" > "$T/out" 2> "$T/err" || rc=$?
    assert_eq 3 "$rc" "$mode: exit code"
    assert_eq "ferry: $expected" "$(cat "$T/err")" "$mode: message"
    assert_eq "" "$(cat "$T/out")" "$mode: nothing relayed"
    forged_stop
}

refusal http-407 "http://$proxy" \
    "proxy $proxy refused CONNECT $target: 407 Proxy Authentication Required"
# The request, as the proxy read it (up to its blank line, which $(...)
# drops): with Basic credentials, %XX decoded.
refusal http-407 "http://alice:s%40cret@$proxy" \
    "proxy $proxy refused CONNECT $target: 407 Proxy Authentication Required"
assert_eq "CONNECT $target HTTP/1.1
Host: $target
Proxy-Authorization: Basic $(printf alice:s@cret | base64)" "$(tail -1 "$T/http-407.log" | unhex | tr -d '\r')" "CONNECT request"
refusal http-403 "http://$proxy" "proxy $proxy refused CONNECT $target: 403 Forbidden"
refusal http-garbage "http://$proxy" \
    "proxy $proxy sent a malformed answer to CONNECT $target: 'SSH-2.0-OpenSSH_9.2\\x0d\\x0a'"
refusal socks5-refused "socks5://$proxy" \
    "proxy $proxy refused SOCKS5 CONNECT $target: connection refused (5)"
# Greeting: no authentication only; request: CONNECT, ATYP 3, the name, port 22.
assert_eq "050100""050100030c$(printf example.test | hex)0016" \
    "$(tail -1 "$T/socks5-refused.log")" "SOCKS5 greeting and request"
refusal socks5-no-method "socks5://$proxy" \
    "proxy $proxy refused SOCKS5 CONNECT $target: no acceptable authentication method (it may want socks5://USER:PASS@)"
refusal socks5-auth-failed "socks5://bob:pw@$proxy" \
    "proxy $proxy refused SOCKS5 CONNECT $target: user/password authentication failed for user 'bob'"
# Greeting: none or user/password; RFC 1929: version 1, "bob", "pw".
assert_eq "050200020103$(printf bob | hex)02$(printf pw | hex)" \
    "$(tail -1 "$T/socks5-auth-failed.log")" "SOCKS5 authentication"
refusal socks4-rejected "socks4a://carol@$proxy" \
    "proxy $proxy refused SOCKS4a CONNECT $target: request rejected or failed (91)"
# VN 4, CD 1, port 22, 0.0.0.1, "carol", the name.
assert_eq "04010016""00000001""$(printf carol | hex)00$(printf example.test | hex)00" \
    "$(tail -1 "$T/socks4-rejected.log")" "SOCKS4a request"
# What SOCKS4 cannot carry: an IPv6 address, a name this host cannot
# resolve (the resolver's reason varies: only the frame is checked).
forged_start socks4-rejected
rc=0
: | within 10 "$FERRY" --proxy="socks4://$proxy" "[::1]:22" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "SOCKS4 to IPv6: exit code"
assert_eq "ferry: cannot connect to '[::1]:22' through proxy $proxy: SOCKS4 carries no IPv6 address (use socks5://)" \
    "$(cat "$T/err")" "SOCKS4 to IPv6: message"
rc=0
: | within 20 "$FERRY" --proxy="socks4://$proxy" "$target" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "SOCKS4 to a name: exit code"
grep -qx "ferry: cannot connect to '$target' through proxy $proxy: .* (SOCKS4 needs an IPv4 address; socks4a:// lets the proxy resolve it)" \
    "$T/err" || fail "SOCKS4 to a name: message: $(cat "$T/err")"
forged_stop
refusal close-early "http://$proxy" "proxy $proxy closed the connection during CONNECT $target"
refusal close-early "socks5://$proxy" \
    "proxy $proxy closed the connection during SOCKS5 CONNECT $target"
start=$(date +%s%N)
refusal silent "socks5://$proxy" "proxy $proxy did not answer SOCKS5 CONNECT $target within 1 s" \
    --connect-timeout=1
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 8000 ] || fail "a silent proxy held ferry ${ms} ms with --connect-timeout=1"

# Nobody listens on the proxy's port.
rc=0
: | within 10 "$FERRY" --proxy="socks5://$proxy" "$target" 2> "$T/err" || rc=$?
assert_eq 3 "$rc" "no proxy: exit code"
assert_eq "ferry: cannot connect to proxy $proxy: Connection refused" "$(cat "$T/err")" "no proxy: message"

# nc's -X connect -x HOST:PORT, and -X 5: the same lines, nc's exit 1.
forged_start http-407
rc=0
: | within 10 "$FERRY" --compat=nc -X connect -x "$proxy" example.test 22 2> "$T/err" || rc=$?
assert_eq 1 "$rc" "nc -X connect: exit code"
assert_eq "nc: proxy $proxy refused CONNECT $target: 407 Proxy Authentication Required" \
    "$(cat "$T/err")" "nc -X connect: message"
forged_stop
forged_start socks5-refused
rc=0
: | within 10 "$FERRY" --compat=nc -x "$proxy" example.test 22 2> "$T/err" || rc=$?
assert_eq 1 "$rc" "nc -x (SOCKS5): exit code"
assert_eq "nc: proxy $proxy refused SOCKS5 CONNECT $target: connection refused (5)" \
    "$(cat "$T/err")" "nc -x (SOCKS5): message"
forged_stop

# A stop signal in the handshake: 128 + the signal and one line, at once.
forged_start silent
in_handshake () { ss -Htn state established "dport = :$port" | grep -q .; }
stop_while_connecting "$target" "in the handshake" in_handshake -- --proxy="http://$proxy"
forged_stop

# Malformed URLs: a usage error naming what is wrong, exit 2.
expected="(expected SCHEME://[USER[:PASS]@]HOST[:PORT], SCHEME http, socks4, socks4a or socks5)"
while IFS='|' read -r url reason; do
    rc=0
    "$FERRY" --proxy="$url" "$target" 2> "$T/err" || rc=$?
    assert_eq 2 "$rc" "--proxy=$url: exit code"
    assert_eq "ferry: invalid --proxy '$url': $reason; see 'ferry --help'" "$(cat "$T/err")" \
        "--proxy=$url: message"
done <<URLS
127.0.0.1:3128|no scheme $expected
ftp://127.0.0.1|unknown scheme 'ftp' $expected
http://|no host
http://127.0.0.1:99999|Port ‘99999’ in URI is out of range $expected
socks5://127.0.0.1:1080/x|a path, query or fragment after HOST[:PORT] $expected
socks4://u:p@127.0.0.1|socks4 carries a user id, not a password
URLS
rc=0
"$FERRY" --compat=nc -X 6 -x "$proxy" "${target%:*}" 22 2> "$T/err" || rc=$?
assert_eq 1 "$rc" "nc -X 6: exit code"
assert_eq "nc: unsupported proxy protocol '6' (expected -X connect, 4 or 5)" "$(cat "$T/err")" \
    "nc -X 6: message"
# As netcat-openbsd's, in its order: no proxy for -u, -l, -U or -s.
for args in "-l 1234|listen" "-U $T/none.sock|unix sockets" "-l -u 1234|UDP mode" \
    "-s 127.0.0.1 127.0.0.1 22|local source address"; do
    rc=0
    "$FERRY" --compat=nc -x "$proxy" ${args%|*} 2> "$T/err" || rc=$?
    assert_eq 1 "$rc" "nc -x ${args%|*}: exit code"
    assert_eq "nc: no proxy support for ${args#*|}" "$(cat "$T/err")" "nc -x ${args%|*}: message"
done

# The default ports, netcat's: 3128 for CONNECT, 1080 for SOCKS (named by
# the refusal when nothing listens there; else this part is passed over).
if ! ss -Hltn "sport = :1080 or sport = :3128" | grep -q .; then
    while IFS='|' read -r expected_rc default args; do
        rc=0
        # shellcheck disable=SC2086
        : | within 10 "$FERRY" $args 2> "$T/err" || rc=$?
        assert_eq "$expected_rc" "$rc" "$args: exit code"
        grep -qx "[a-z]*: cannot connect to proxy 127.0.0.1:$default: Connection refused" "$T/err" ||
            fail "$args: not port $default: $(cat "$T/err")"
    done <<ARGS
3|3128|--proxy=http://127.0.0.1 $target
3|1080|--proxy=socks5://127.0.0.1 $target
3|1080|--proxy=socks4a://127.0.0.1 $target
1|1080|--compat=nc -x 127.0.0.1 example.test 22
1|3128|--compat=nc -X connect -x 127.0.0.1 example.test 22
1|1080|--compat=nc -X 4 -x 127.0.0.1 example.test 22
ARGS
fi
