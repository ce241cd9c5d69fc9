#!/usr/bin/env bash
# A zero-size export: a header and an END, and the digest of nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src null size=0
serve dst memory size=0
"$FERRY" -v --nbd-send="$(uri src)" 2> "$T/send.err" > "$T/s.stream" || fail "send: $(cat "$T/send.err")"
assert_eq 128 "$(stat -c %s "$T/s.stream")" "stream size (header 36 + END 92)"
"$FERRY" -v --nbd-receive="$(uri dst)" < "$T/s.stream" 2> "$T/recv.err" || fail "receive: $(cat "$T/recv.err")"
want=$(python3 -c 'import hashlib; print(hashlib.sha256(bytes(8)).hexdigest())')
assert_eq "$want" "$(summary_field "$T/send.err" digest)" "digest of an empty export"
assert_eq "$want" "$(summary_field "$T/recv.err" digest)" "receiver's digest"
assert_eq "$want  $(uri src)" "$("$FERRY" --nbd-digest="$(uri src)")" "--nbd-digest"
