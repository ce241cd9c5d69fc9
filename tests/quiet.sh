#!/usr/bin/env bash
# -q prints nothing but errors: a relay and a local ferry copy that go
# well (even with --progress=always) print nothing on stderr, a
# forwarder's stop notice is left out; a run that fails still prints its
# one line and exit code; -q with -v is a usage error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need socat

# A relay through socat.
bg socat UNIX-LISTEN:"$T/t.sock",fork EXEC:cat
wait_for_socket "$T/t.sock"
assert_eq hi "$(echo hi | within 10 "$FERRY" -q "unix:$T/t.sock" 2> "$T/err")" "relay: the reply"
assert_eq "" "$(cat "$T/err")" "relay -q: stderr"
# ssh's ProxyCommand form, HOST PORT.
port=$(free_port)
bg socat TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr,fork EXEC:cat
wait_for_port "$port"
assert_eq hi "$(echo hi | within 10 "$FERRY" -q 127.0.0.1 "$port" 2> "$T/err")" "HOST PORT: the reply"
assert_eq "" "$(cat "$T/err")" "HOST PORT -q: stderr"

# A local copy of a small sparse file, with a progress line asked for.
sparse_image "$T/a.img" 16 4
within 60 "$FERRY" copy --progress=always "$T/a.img" "$T/b.img" 2> "$T/err"
[ -s "$T/err" ] || fail "copy --progress=always without -q drew no progress line"
within 60 "$FERRY" copy -q --progress=always "$T/a.img" "$T/c.img" 2> "$T/err"
cmp "$T/a.img" "$T/c.img" || fail "copy -q: the copy differs"
assert_eq "" "$(cat "$T/err")" "copy -q: stderr"
within 60 "$FERRY" digest -q "$T/a.img" > "$T/out" 2> "$T/err"
assert_eq 1 "$(wc -l < "$T/out")" "digest -q: its line on stdout"
assert_eq "" "$(cat "$T/err")" "digest -q: stderr"

# A forwarder stopped by SIGTERM with nothing live: a notice at the
# default level, nothing with -q.
for q in "" -q; do
    bg "$FERRY" $q -l "unix:$T/l.sock" "unix:$T/t.sock" 2> "$T/err$q"
    pid=$LAST_PID
    wait_for_socket "$T/l.sock" "$pid"
    kill -TERM "$pid"
    wait_exit 10 "$pid" || fail "forwarder $q: exit code $?"
    rm -f "$T/l.sock"
done
assert_contains "$T/err" "ferry: stopped by SIGTERM: 0 live connections drained" "the notice"
assert_eq "" "$(cat "$T/err-q")" "forwarder -q stopped by SIGTERM: stderr"

# Failures keep their one line.
rc=0
echo hi | within 10 "$FERRY" -q "unix:$T/missing.sock" 2> "$T/err" || rc=$?
assert_ferry_error 3 "$rc" "$T/err" "ferry: "
assert_eq 1 "$(wc -l < "$T/err")" "relay -q that fails: lines on stderr"
rc=0
within 60 "$FERRY" copy -q "$T/a.img" "$T/no/such/dir/d.img" 2> "$T/err" || rc=$?
[ "$rc" -ne 0 ] || fail "copy -q into a missing directory succeeded"
assert_contains "$T/err" "ferry: " "copy -q that fails: its line"
assert_eq 1 "$(wc -l < "$T/err")" "copy -q that fails: lines on stderr"

# -q and -v contradict.
for args in "-q -v" "-qv" "--quiet --verbose" "-vv -q"; do
    rc=0
    # shellcheck disable=SC2086
    "$FERRY" $args "unix:$T/t.sock" < /dev/null 2> "$T/err" || rc=$?
    assert_ferry_error 2 "$rc" "$T/err" "ferry: -q/--quiet and -v/--verbose contradict each other; see 'ferry --help'"
    assert_eq 1 "$(wc -l < "$T/err")" "$args: lines on stderr"
done
rc=0
"$FERRY" copy -q -v "$T/a.img" "$T/e.img" 2> "$T/err" || rc=$?
assert_ferry_error 2 "$rc" "$T/err" "contradict each other; see 'ferry copy --help'"
exit 0
