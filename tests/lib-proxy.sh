# ferry test library: relays through a --proxy.  Source after lib.sh.
#
#   $T/data, $echo_port    4 MiB of data, and an echo server on 127.0.0.1
#                          that ends after echoing that much (tinyproxy and
#                          microsocks end both directions at the first EOF:
#                          relays through them take --no-shutdown)
#   through WHAT FERRY-ARGS...   $T/data through ferry comes back whole,
#                          exit 0, stderr empty
#   refused WHAT RC LINE FERRY-ARGS...   ferry fails with RC and exactly LINE
#   forwarded WHAT PROXY-URL     a forwarder (-l -k) whose TARGET, the echo
#                          server, is reached through PROXY-URL: two clients
#                          one after the other, each echoed whole
need socat

size=$((4 * 1024 * 1024))
make_data data $size
echo_port=$(free_port)
bg socat "TCP-LISTEN:$echo_port,bind=127.0.0.1,reuseaddr,fork" SYSTEM:"head -c $size"
wait_for_port "$echo_port"

through () {  # WHAT FERRY-ARGS...
    local what=$1 rc=0
    shift
    within 60 "$FERRY" "$@" < "$T/data" > "$T/got" 2> "$T/err" || rc=$?
    assert_eq 0 "$rc" "$what: exit code ($(cat "$T/err"))"
    assert_same_file "$T/data" "$T/got" "$what: echoed through the proxy"
    assert_eq "" "$(cat "$T/err")" "$what: stderr"
}

refused () {  # WHAT RC LINE FERRY-ARGS...
    local what=$1 expected_rc=$2 line=$3 rc=0
    shift 3
    : | within 20 "$FERRY" "$@" > "$T/out" 2> "$T/err" || rc=$?
    assert_eq "$expected_rc" "$rc" "$what: exit code"
    assert_eq "$line" "$(cat "$T/err")" "$what: message"
}

forwarded () {  # WHAT PROXY-URL
    local listen forwarder i
    listen=$(free_port)
    bg "$FERRY" --no-shutdown --proxy="$2" -l -k "127.0.0.1:$listen" "localhost:$echo_port" \
        2> "$T/forwarder.err"
    forwarder=$LAST_PID
    wait_for_port "$listen"
    for i in 1 2; do
        within 60 socat -t 30 - "TCP:127.0.0.1:$listen" < "$T/data" > "$T/got.$i" 2>/dev/null
        assert_same_file "$T/data" "$T/got.$i" "$1: forwarded client $i"
    done
    kill "$forwarder"; wait "$forwarder" 2>/dev/null || true
}
