#!/usr/bin/env bash
# -vv adds a line per connection (a forwarder's accept, connect and end;
# the stdio relay's peer) and, in a remote copy, per channel and per
# range, which -v does not print; -v keeps its summary.
. "$(dirname "$0")/lib.sh"
need socat
bg socat UNIX-LISTEN:"$T/t.sock",fork EXEC:cat
wait_for_socket "$T/t.sock"
forward () {  # LEVEL
    bg "$FERRY" "$1" -l "unix:$T/l.sock" "unix:$T/t.sock" 2> "$T/err$1"
    local pid=$LAST_PID
    wait_for_socket "$T/l.sock" "$pid"
    assert_eq hi "$(echo hi | within 10 socat - UNIX-CONNECT:"$T/l.sock")" "$1: the reply"
    wait_exit 10 "$pid" || fail "$1: the forwarder did not exit"
    rm -f "$T/l.sock"
}
forward -v
forward -vv
for level in -v -vv; do
    assert_contains "$T/err$level" "1 connections, at most 1 at once" "$level: the summary"
    assert_contains "$T/err$level" ": client -> $T/t.sock: 3 bytes" "$level: the statistics"
done
assert_contains "$T/err-vv" "ferry: connection 1 on $T/l.sock: accepted (1 live)" "-vv: the accept"
assert_contains "$T/err-vv" "ferry: connection 1 on $T/l.sock: connected to $T/t.sock" "-vv: the connect"
assert_contains "$T/err-vv" "ferry: connection 1 on $T/l.sock: ended, exit code 0 (0 live)" "-vv: the end"
grep -E ": (accepted|connected to|ended)" "$T/err-v" && fail "-v printed -vv's lines"
assert_eq 3 $(($(wc -l < "$T/err-vv") - $(wc -l < "$T/err-v"))) "lines that -vv adds"

# The stdio relay: its peer.
echo hi | within 10 "$FERRY" -vv "unix:$T/t.sock" > /dev/null 2> "$T/err"
assert_contains "$T/err" "ferry: $T/t.sock: relaying with stdio" "-vv: the stdio relay's peer"

# A remote copy: a line per channel and per range.
[ -x /usr/sbin/sshd ] || exit 0
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
ssh_host_alias testhost
sparse_image "$T/a.img" 256 64
mkdir "$T/far"
for level in -v -vv; do
    within 120 env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" copy --remote-helper="$FERRY" \
        --streams=2 "$level" "$T/a.img" "testhost:$T/far/up$level.img" 2> "$T/copy$level" ||
        fail "copy $level: $(cat "$T/copy$level")"
    cmp "$T/a.img" "$T/far/up$level.img" || fail "copy $level: the copy differs"
    assert_contains "$T/copy$level" "ferry: copy: streams=2 ranges=" "$level: the summary"
done
for n in 1 2; do
    assert_contains "$T/copy-vv" "(stream $n): channel open, ran: " "-vv: stream $n's channel"
    assert_contains "$T/copy-vv" "(stream $n): channel ended, exit code 0" "-vv: stream $n's end"
done
ranges=$(sed -n 's/^ferry: copy: streams=2 ranges=\([0-9]*\) .*/\1/p' "$T/copy-vv")
assert_eq "$ranges" "$(grep -c ' done: offset=' "$T/copy-vv")" "-vv: a line per range"
assert_contains "$T/copy-vv" ": range 0 done: offset=0 length=" "-vv: range 0"
grep -E "channel open|done: offset=" "$T/copy-v" && fail "copy -v printed -vv's lines"
exit 0
