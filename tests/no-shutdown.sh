#!/usr/bin/env bash
# --no-shutdown: after stdin EOF ferry does not half-close the socket.  The
# server reads the 6-byte request, then waits 1 s for an EOF that must not
# come, replies, and closes; ferry delivers the reply and exits 0.  Without
# --no-shutdown the same server sees the EOF (it waits up to 20 s for it,
# a hang guard on a loaded machine).
. "$(dirname "$0")/lib.sh"
need socat timeout
listen_addresses unix

for mode in --no-shutdown half-close; do
    rm -f "$T/s.sock"
    opts=() wait=20
    [ "$mode" = --no-shutdown ] && opts=(--no-shutdown) wait=1
    bg socat -t 30 "$SOCAT_LISTEN" SYSTEM:"head -c 6 > '$T/got'; \
        timeout $wait cat > /dev/null; echo \$? > '$T/eof-rc'; echo reply"
    wait_for_listener unix
    printf 'hello\n' | within 30 "$FERRY" "${opts[@]}" "$FERRY_ADDR" > "$T/reply"
    assert_eq 0 "${PIPESTATUS[1]}" "ferry $mode exit code"
    assert_eq hello "$(cat "$T/got")" "$mode: request"
    assert_eq reply "$(cat "$T/reply")" "$mode: reply"
    # timeout(1) says 124 when cat was still waiting for EOF.
    if [ "$mode" = --no-shutdown ]; then
        assert_eq 124 "$(cat "$T/eof-rc")" "server's wait for EOF with --no-shutdown"
    else
        assert_eq 0 "$(cat "$T/eof-rc")" "server's wait for EOF after a half-close"
    fi
done
