#!/usr/bin/env bash
# [V6ADDR]:PORT, and V6ADDR PORT as two arguments (ssh's ProxyCommand %h
# %p): ferry reaches a socat server on [::1], and ferry -l listens on
# [::1].  Skipped where IPv6 loopback is not available.
. "$(dirname "$0")/lib.sh"
need socat python3
port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0)); print(s.getsockname()[1])' 2>/dev/null) ||
    skip "no IPv6 loopback"
make_data up 300000
make_data reply 400000

for args in "[::1]:$port" "::1 $port"; do
    bg socat -t 10 "TCP6-LISTEN:$port,bind=[::1],reuseaddr" \
        SYSTEM:"cat > '$T/server-got'; cat '$T/reply'"
    wait_for_port "$port"
    # shellcheck disable=SC2086 # "::1 PORT" is two arguments
    cat "$T/up" | within 10 "$FERRY" $args | cat > "$T/got"
    assert_eq 0 "${PIPESTATUS[1]}" "ferry $args exit code"
    assert_same_file "$T/up" "$T/server-got" "ferry $args: upload"
    assert_same_file "$T/reply" "$T/got" "ferry $args: reply"
    wait "$LAST_PID" || fail "socat server exited $?"
done

# An empty stdin: a TCP client's close looks like a half-close, and ferry -l
# would otherwise relay an open stdin until its EOF.
"$FERRY" -l "tcp:[::1]:$port" < /dev/null > "$T/server-got" & track $!
server=$LAST_PID
wait_for_port "$port"
within 10 socat -u "OPEN:$T/up" "TCP6:[::1]:$port" || fail "socat client exited $?"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "ferry -l tcp:[::1]:$port exit code"
assert_same_file "$T/up" "$T/server-got" "upload to ferry -l"
