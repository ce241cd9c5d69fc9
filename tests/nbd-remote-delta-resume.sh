#!/usr/bin/env bash
# --delta resumes a copy: an upload over --streams=4 whose local ferry is
# SIGKILLed once part of the destination is written; a re-run with
# --delta sends exactly the blocks that still differ (counted beforehand
# from both exports' block digests, tests/block-digests.c) and makes
# the copy identical.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
size=$((512 * 1024 * 1024)) B=65536
serve_src () { serve src --filter=delay sparse-random size=$size seed=5 percent=50 rdelay=20ms; src_pid=$LAST_PID; }
serve_src
serve dst memory size=$size
cat > "$T/helper" <<HELPER
#!/bin/sh
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"

env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" --streams=4 \
    --nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst)" --request-size=256K \
    --in-flight=256K "$(ssh_base)?keyfile=$SSH_KEY" 2> "$T/killed.err" &
local_pid=$!
# nbdkit memory maps what was written as data: 32 MiB of it, then the kill.
written () {
    [ "$(nbdinfo --map --totals "$(uri dst)" | awk '$3 == 0 { n += $1 } END { print n + 0 }')" \
        -ge $((32 * 1024 * 1024)) ]
}
wait_until 60 written
kill -9 "$local_pid"
wait "$local_pid" || true
gone () { ! pgrep -f -- "--remote-helper=$T/helper" > /dev/null && ! pgrep -f -- "^$FERRY --nbd-receive=$(uri dst)" > /dev/null; }
wait_until 10 gone
# The killed ferry's reads were in flight (serve_again_if_dead).
sleep 0.2
serve_again_if_dead src "$src_pid" serve_src

block_digests () {  # NAME
    within 60 "$FERRY_BLOCK_DIGESTS" "$(uri "$1")" 0:$size > "$T/$1.digests"
}
block_digests src
block_digests dst
missing=$(paste -d' ' "$T/src.digests" "$T/dst.digests" | awk '$1 != $2' | wc -l)
data=$(grep -cv "^de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31$" "$T/src.digests")
echo "missing: $missing blocks, of the source's $data data blocks" >&2
[ "$missing" -gt 0 ] && [ "$missing" -lt $((data - 32 * 1024 * 1024 / B / 2)) ] ||
    fail "$missing blocks differ after the kill, of $data data blocks"

remote_copy up "$(uri src)" "$(uri dst)" --streams=4 --delta -v
assert_eq 0 "$REMOTE_RC" "the resumed copy's exit code"
within 300 qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 || fail "the copy differs"
assert_contains "$T/remote.err" "ferry: delta: compared=$((size / B)) blocks, sent=$missing " \
    "blocks sent by the resumed copy"
