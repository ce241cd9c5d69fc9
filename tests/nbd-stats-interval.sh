#!/usr/bin/env bash
# ferry --nbd --stats-interval 1: a copy that takes a few seconds (nbdkit's
# delay filter) gets interval blocks while it runs and one final block,
# each with the handshake summary, in key=value form, on stderr.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy

bg nbdkit -f -U "$T/src.sock" --filter=delay pattern size=4M rdelay=500ms
wait_for_socket "$T/src.sock"
within 60 nbdcopy --requests=1 --request-size=1048576 \
    -- [ "$FERRY" --nbd --stats-interval 1 "unix:$T/src.sock" ] null: 2> "$T/err" ||
    fail "nbdcopy through ferry --nbd failed: $(cat "$T/err")"
cat "$T/err" >&2
intervals=$(grep -c 'nbd: stats interval after' "$T/err" || true)
[ "$intervals" -ge 1 ] || fail "no interval stats in $(cat "$T/err")"
assert_eq 1 "$(grep -c 'nbd: stats final after' "$T/err")" "final stats blocks"
assert_eq $((intervals + 1)) "$(grep -c 'nbd: handshake style=fixed-newstyle' "$T/err")" \
    "handshake summaries"
grep -q 'nbd: cmd=read ops=4 bytes=4194304 seconds=[0-9.]* mib_per_s=[0-9.]* inflight_avg=[0-9.]* inflight_max=[0-9]* errors=0 hole_bytes=0$' \
    "$T/err" || fail "final read line"

# The same to a file, and no stats on stderr (nbdcopy may SIGTERM its
# [ CMD ] before it is done, which ferry reports).
within 60 nbdcopy -- [ "$FERRY" --nbd --stats-file "$T/stats" "unix:$T/src.sock" ] null: \
    2> "$T/err2" || fail "nbdcopy with --stats-file failed"
assert_contains "$T/stats" "nbd: stats final" "stats file"
! grep -q 'nbd:' "$T/err2" || fail "stats on stderr with --stats-file: $(cat "$T/err2")"
rc=0; "$FERRY" --stats-interval 1 unix:/nowhere 2> "$T/err3" || rc=$?
assert_eq 2 "$rc" "--stats-interval without --nbd"
