#!/usr/bin/env bash
# --stats=json in the stream modes: --nbd-send | --nbd-receive between
# nbdkit exports, each half's object with -v's counts (data, zero, wire,
# requests, digest) and exit code 0; a truncated stream's receiver has 21
# in its object; ferry copy of a small sparse file writes one object that
# holds both halves' (as -v's two lines); a copy from a missing SRC has
# its exit code in the object.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
J=$FERRY_SOURCE_ROOT/tests/stats-json.py

# The -v line of MODE (send, receive) in FILE, as "data zero wire requests digest".
v_line () {  # FILE MODE
    sed -nE "s/^ferry: $2: data=([0-9]+) zero=([0-9]+) wire=([0-9]+) requests=([0-9]+) .* digest=([0-9a-f]+)$/\1 \2 \3 \4 \5/p" "$1"
}
# The same fields of object INDEX (PREFIX: a member holding them, e.g. "send.").
j_line () {  # FILE INDEX [PREFIX]
    python3 "$J" get "$1" "$2" "${3:-}data" "${3:-}zero" "${3:-}wire" "${3:-}requests" \
        "${3:-}digest" | paste -sd ' '
}

serve src sparse-random size=64M seed=3 percent=10
serve dst memory size=64M
within 60 "$FERRY" -v --stats=json --nbd-send="$(uri src)" 2> "$T/send.err" |
    within 60 "$FERRY" -v --stats=json:"$T/receive.json" --nbd-receive="$(uri dst)" \
        2> "$T/receive.err"
assert_eq "0 0" "${PIPESTATUS[0]} ${PIPESTATUS[1]}" "exit codes of --nbd-send | --nbd-receive"
cat "$T/send.err" "$T/receive.err" >&2
grep '^{' "$T/send.err" | python3 -m json.tool > /dev/null || fail "the sender's object is not JSON"
python3 -m json.tool "$T/receive.json" > /dev/null || fail "the receiver's file is not JSON"
assert_eq 1 "$(python3 "$J" count "$T/send.err")" "the sender's objects"
assert_eq 0 "$(python3 "$J" count "$T/receive.err")" "objects on the receiver's stderr"
v_send=$(v_line "$T/send.err" send)
v_receive=$(v_line "$T/receive.err" receive)
[ -n "$v_send" ] && [ -n "$v_receive" ] || fail "no -v lines"
assert_eq "$v_send" "$(j_line "$T/send.err" -1)" "the sender's counts, as -v's"
assert_eq "$v_receive" "$(j_line "$T/receive.json" 0)" "the receiver's counts, as -v's"
assert_eq "send 0" "$(python3 "$J" get "$T/send.err" -1 type exit_code | paste -sd ' ')" \
    "the sender's type and exit code"
assert_eq "receive 0" "$(python3 "$J" get "$T/receive.json" 0 type exit_code | paste -sd ' ')" \
    "the receiver's type and exit code"
assert_eq "$(independent_digest "$(uri src)")" "$(python3 "$J" get "$T/receive.json" 0 digest)" \
    "the digest"

# A truncated stream: the receiver's code, 21, in its object (with -q).
"$FERRY" --nbd-send="$(uri src)" | head -c 100000 > "$T/cut.stream"
rc=0
"$FERRY" -q --stats=json --nbd-receive="$(uri dst)" < "$T/cut.stream" 2> "$T/err" || rc=$?
assert_eq 21 "$rc" "exit code of a truncated stream"
assert_eq "receive 21" "$(python3 "$J" get "$T/err" -1 type exit_code | paste -sd ' ')" \
    "a truncated stream's object"

# ferry copy of a sparse file: one object, the halves' inside.
sparse_image "$T/a.img" 8 5
within 60 "$FERRY" copy -v --stats=json "$T/a.img" "$T/b.img" 2> "$T/err" ||
    fail "ferry copy: $(cat "$T/err")"
cat "$T/err" >&2
cmp "$T/a.img" "$T/b.img" || fail "ferry copy: the copy differs"
grep '^{' "$T/err" | python3 -m json.tool > /dev/null || fail "ferry copy's object is not JSON"
assert_eq 1 "$(python3 "$J" count "$T/err")" "ferry copy's objects"
assert_eq "copy 0 0 0" "$(python3 "$J" get "$T/err" 0 type send.exit_code receive.exit_code \
    exit_code | paste -sd ' ')" "ferry copy's type and exit codes"
assert_eq "$(v_line "$T/err" send)" "$(j_line "$T/err" 0 send.)" "ferry copy's sender, as -v's"
assert_eq "$(v_line "$T/err" receive)" "$(j_line "$T/err" 0 receive.)" \
    "ferry copy's receiver, as -v's"
assert_eq "$(python3 "$J" get "$T/err" 0 send.data)" \
    "$(data_map "$T/a.img" | awk '{ n += $2 - $1 } END { print n }')" \
    "ferry copy's data bytes: SRC's extents"

# A missing SRC: the copy's exit code in its object.
rc=0; "$FERRY" copy --stats=json "$T/nothing.img" "$T/c.img" 2> "$T/err" || rc=$?
[ "$rc" -ne 0 ] || fail "ferry copy of a missing SRC succeeded"
assert_eq "copy $rc" "$(python3 "$J" get "$T/err" -1 type exit_code | paste -sd ' ')" \
    "a failed copy's object"
