#!/usr/bin/env bash
# --streams=2 uploading to forged remote receivers that answer each range
# only once two more ranges have begun (or nothing came for 0.5 s): an
# upload's sender goes on to its next ranges while one waits for its
# answer (up to 4 may wait), so some answer is held past two ranges, and
# the copy succeeds.  A sender that waited for the answer of range k-1 at
# the end of range k (before it asked for k+1) let no answer be held so.
# And receivers that answer the last ranges only after END and their
# input's end: the sender does not wait for those answers before END.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3
start_sshd main /usr/bin:/bin
# All zero: ZERO records, and 7 ranges (128 MiB down to 16 MiB) at once.
serve src null size=512M
serve dst memory size=512M
cat > "$T/helper" <<HELPER
#!/bin/sh
exec python3 "$FERRY_SOURCE_ROOT/tests/nbd-stream-ranged-peer.py" remote-receiver late-answers \
    "$T/held"
HELPER
chmod +x "$T/helper"
REMOTE_HELPER=$T/helper
remote_copy up "$(uri src)" "$(uri dst)" --streams=2
assert_eq 0 "$REMOTE_RC" "exit code"
assert_eq 2 "$(grep -c '^held ' "$T/held")" "both receivers ended"
held=$(awk '{ n += $2 } END { print n + 0 }' "$T/held")
[ "$held" -ge 1 ] || fail "no answer was held past two ranges: the senders waited for each"

# The last answers only once END and the stream's end came: the sender
# sends END after its last RANGE_END at once, and waits for the answers
# after it (a copy that ends one round trip after its last record).
sed -i 's/ late-answers / answers-after-end /' "$T/helper"
: > "$T/held"
REMOTE_WITHIN=30 remote_copy up "$(uri src)" "$(uri dst)" --streams=2
assert_eq 0 "$REMOTE_RC" "answers after END: exit code"
assert_eq 2 "$(grep -c '^held ' "$T/held")" "answers after END: both receivers ended"
