#!/usr/bin/env bash
# ferry --nbd-readonly: the export the client sees is read-only, and a
# libnbd client with its own checks off that still sends WRITE, TRIM and
# WRITE_ZEROES gets EPERM from ferry (as a structured error chunk, or a
# simple reply with --no-sr) while reads and flushes pass.  The disk on the
# server never changes.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdinfo sha256sum
client=${FERRY_BUILD_ROOT:?}/tests/nbd/nbd-write-client
[ -x "$client" ] || skip "nbd-write-client was not built (no libnbd-dev)"

make_data disk.img $((1024 * 1024))
before=$(sha "$T/disk.img")
bg nbdkit -f -U "$T/disk.sock" file "$T/disk.img"
wait_for_socket "$T/disk.sock"

within 30 nbdinfo -- [ "$FERRY" --nbd-readonly "unix:$T/disk.sock" ] > "$T/info" 2>/dev/null ||
    fail "nbdinfo through ferry --nbd-readonly failed"
assert_contains "$T/info" "is_read_only: true" "nbdinfo through the guard"
nbdinfo "nbd+unix:///?socket=$T/disk.sock" | grep -q "is_read_only: false" ||
    fail "the server itself should be writable"

for mode in structured --no-sr; do
    args=(); [ "$mode" = --no-sr ] && args=(--no-sr)
    within 30 "$client" "${args[@]}" -- "$FERRY" --nbd-readonly --stats-file "$T/stats-$mode" \
        "unix:$T/disk.sock" > "$T/out-$mode" || fail "$mode: the client failed"
    cat "$T/out-$mode" >&2
    assert_contains "$T/out-$mode" "read_only: 1" "$mode: read-only flag"
    assert_contains "$T/out-$mode" "structured: $([ "$mode" = structured ] && echo 1 || echo 0)" \
        "$mode: negotiated replies"
    for cmd in write trim zero; do
        assert_contains "$T/out-$mode" "$cmd: $(python3 -c 'import os; print(os.strerror(1))')" \
            "$mode: $cmd refused with EPERM"
    done
    assert_contains "$T/out-$mode" "read: ok" "$mode: read passes"
    assert_contains "$T/out-$mode" "flush: ok" "$mode: flush passes"
    assert_contains "$T/stats-$mode" "cmd=write ops=0" "$mode: the write never reached the server"
    assert_contains "$T/stats-$mode" "refused=1" "$mode: refusals counted"
    assert_eq "$before" "$(sha "$T/disk.img")" "$mode: disk after the attempts"
done

# Without the guard the same client does change the disk: the test can tell.
within 30 "$client" -- "$FERRY" --nbd "unix:$T/disk.sock" > "$T/out-rw"
assert_contains "$T/out-rw" "write: ok" "write without the guard"
[ "$before" != "$(sha "$T/disk.img")" ] || fail "an unguarded write left the disk unchanged"
