#!/usr/bin/env bash
# ferry copy --check-source: SRC read again at the end must have DST's
# digest.  A SRC left alone passes; one whose first block is overwritten
# after it was copied (a live disk) fails with exit 22 and one line that
# names SRC, where a plain copy exits 0 with DST holding the old block.
# With --streams=2 on this host (the local halves are forks of ferry
# copy), only the copy itself checks SRC: it ends, and leaves no process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
head -c $((2 * 1024 * 1024)) /dev/urandom > "$T/a.img"
"$FERRY" copy --check-source "$T/a.img" "$T/b.img" 2> "$T/err" || fail "a quiet SRC: $(cat "$T/err")"
cmp "$T/a.img" "$T/b.img" || fail "a quiet SRC: the copy differs"
rm "$T/b.img"
within 60 "$FERRY" copy --check-source --streams=2 "$T/a.img" "$T/b.img" 2> "$T/err" ||
    fail "a quiet SRC, --streams=2: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "a quiet SRC, --streams=2: ferry said: $(cat "$T/err")"
cmp "$T/a.img" "$T/b.img" || fail "a quiet SRC, --streams=2: the copy differs"
! pgrep -f "copy --check-source --streams=2 $T/a.img" > /dev/null ||
    fail "a quiet SRC, --streams=2: ferry processes are left running"

# 32 reads of 64 KiB, one at a time, 100 ms each: the first block is
# copied long before the end.
slow=('[' nbdkit --filter=delay file "$T/a.img" rdelay=100ms ']')
overwrite_first_block () {
    sleep 1
    head -c 65536 /dev/urandom | dd of="$T/a.img" conv=notrunc status=none
}
for check in no yes; do
    head -c $((2 * 1024 * 1024)) /dev/urandom > "$T/a.img"
    rm -f "$T/b.img"
    overwrite_first_block &
    rc=0
    if [ $check = yes ]; then
        within 60 "$FERRY" copy --check-source --request-size=64K --in-flight=64K \
            "${slow[@]}" "$T/b.img" 2> "$T/err" || rc=$?
    else
        within 60 "$FERRY" copy --request-size=64K --in-flight=64K \
            "${slow[@]}" "$T/b.img" 2> "$T/err" || rc=$?
    fi
    wait $!
    cmp -s "$T/a.img" "$T/b.img" && fail "check=$check: the first block was not changed in time"
    if [ $check = no ]; then
        assert_eq 0 "$rc" "a live SRC without --check-source: exit code"
    else
        assert_eq 22 "$rc" "a live SRC with --check-source: exit code"
        assert_eq 1 "$(wc -l < "$T/err")" "a live SRC with --check-source: one line"
        assert_contains "$T/err" "ferry: nbdkit changed during the copy: its digest is now " \
            "a live SRC with --check-source: the message"
    fi
done
