#!/usr/bin/env bash
# Malformed addresses: exit 2 before connecting to anything, with a message
# that names the address.
. "$(dirname "$0")/lib.sh"
long=/tmp/$(printf '%0200d' 0)
for address in "" nowhere "unix:" "unix:@" "@" "$long" "tcp:localhost" \
               "tcp::80" "localhost:" "localhost:0" "localhost:65536" \
               "localhost:8x" "::1:80" "[::1:80" "[::1]80" "fd:" "fd:x" "fd:-1" \
               "127.0.0.1:-1" "127.0.0.1:-http" "ssh://h: 22/p" "ssh://h:+22/p" \
               "ssh://bad host/p"; do
    rc=0
    : | within 10 "$FERRY" "$address" 2> "$T/err" || rc=$?
    assert_ferry_error 2 "$rc" "$T/err" "ferry: invalid address '$address': "
    assert_eq 1 "$(wc -l < "$T/err")" "lines of the message for '$address'"
done
# What was not understood is named (issue 26), not "an IPv6 address needs
# brackets" for all three.
for pair in "tpc:host:22|unknown address type 'tpc' (expected unix:, tcp:, fd:, ssh://)" \
            "udp:127.0.0.1:53|udp: needs --compat=nc -u" \
            "host:ssh:22|port 'ssh:22' must be 1-65535 or a service name" \
            "relative.sock|a socket path needs a '/' (./relative.sock or unix:relative.sock), a TCP address a port (relative.sock:PORT)" \
            "::1:80|an IPv6 address needs brackets: [ADDRESS]:PORT"; do
    address=${pair%%|*}
    rc=0
    : | within 10 "$FERRY" "$address" 2> "$T/err" || rc=$?
    assert_eq 2 "$rc" "exit code for '$address'"
    assert_eq "ferry: invalid address '$address': ${pair#*|}" "$(cat "$T/err")" "message for '$address'"
done
# The host that libssh refuses is named, with the reason.
"$FERRY" "ssh://bad host/p" < /dev/null 2> "$T/err" || true
assert_contains "$T/err" "libssh refuses the host name 'bad host' (expected a DNS name or an IP address)" "ssh host message"
# --drain-timeout -1 is refused like -2, not taken as the default.
for t in -1 -2; do
    rc=0
    "$FERRY" --drain-timeout "$t" -l unix:$T/a.sock unix:$T/b.sock < /dev/null 2> "$T/err" || rc=$?
    assert_ferry_error 2 "$rc" "$T/err" "ferry: invalid --drain-timeout '$t': expected a number of seconds >= 0"
done
