#!/usr/bin/env bash
# ferry copy and ferry digest on this host, stopped early and given what
# is not an image: a SIGTERM in a local copy's first tens of milliseconds
# (while its halves start) stops it, exit 143, never a copy that runs on
# to exit 0; ferry digest of eight images stopped by SIGTERM (also just
# as one image's child ends) ends with exit 143 and one line, its child
# too (no digest line after it has exited), reading no further image; a digest
# to a full stdout says so once and reads no further image; a FIFO as
# SRC, as an image to digest or as DST is refused at once (one line,
# exit 3), never waited on for a writer.
. "$(dirname "$0")/lib.sh"
M=$((1024 * 1024))
# Random data, so that the copy and the digests take a while (128 MiB
# cached: a few hundred ms to copy, hashed on both halves).
head -c $((128 * M)) /dev/urandom > "$T/a.img"

# A stop while the halves start: the parent passes it to whichever half
# is its target, and a half whose handlers are not in place yet gets it
# once they are.  Before ferry's own handlers the default action ends it
# (143, nothing said), so only the code is asserted that early; once DST
# exists (both halves run), its one line too.
for delay in 0.005 0.01 0.015 0.02 0.03 0.05 0.1 dst; do
    rm -f "$T/b.img"
    env --default-signal=INT,QUIT "$FERRY" copy "$T/a.img" "$T/b.img" 2> "$T/err" &
    pid=$!
    if [ "$delay" = dst ]; then
        wait_until 20 test -e "$T/b.img"
    else
        sleep "$delay"
    fi
    kill -TERM "$pid"
    rc=0
    wait_exit 30 "$pid" || rc=$?
    assert_eq 143 "$rc" "exit code of a local copy stopped after ${delay} s ($(cat "$T/err"))"
done
assert_eq 1 "$(wc -l < "$T/err")" "lines of a local copy stopped once DST existed"
grep -q "^ferry: stopped by SIGTERM" "$T/err" ||
    fail "a local copy stopped once DST existed said: $(cat "$T/err")"

# ferry digest: the stop ends the image's child too, and the other
# images are not read.  Once a child runs, ferry's handler is in place.
images=("$T/a.img" "$T/a.img" "$T/a.img" "$T/a.img" "$T/a.img" "$T/a.img" "$T/a.img" "$T/a.img")
for delay in 0 0.1; do
    env --default-signal=INT,QUIT "$FERRY" digest "${images[@]}" > "$T/out" 2> "$T/err" &
    pid=$!
    wait_until 20 pgrep -P "$pid" > /dev/null
    sleep "$delay"
    kill -TERM "$pid"
    rc=0
    wait_exit 30 "$pid" || rc=$?
    what="ferry digest stopped ${delay} s after its first child started"
    assert_eq 143 "$rc" "exit code of $what ($(cat "$T/err"))"
    assert_eq 1 "$(wc -l < "$T/err")" "lines of $what"
    grep -q "^ferry: stopped by SIGTERM" "$T/err" || fail "$what said: $(cat "$T/err")"
    lines=$(wc -l < "$T/out")
    [ "$lines" -lt ${#images[@]} ] || fail "$what printed every digest"
    sleep 1
    assert_eq "$lines" "$(wc -l < "$T/out")" "digest lines printed after $what exited"
done

# A full stdout: one line, exit 4, and the next images are not read.
rc=0
within 60 "$FERRY" digest "$T/a.img" "$T/a.img" "$T/a.img" > /dev/full 2> "$T/err" || rc=$?
assert_eq 4 "$rc" "exit code of ferry digest into /dev/full"
assert_eq "ferry: cannot write the digest to stdout: No space left on device" "$(cat "$T/err")" \
    "message of ferry digest into /dev/full"

# A FIFO with no writer (SRC, digest) and with no reader (DST).
mkfifo "$T/fifo"
for args in "copy $T/fifo $T/c.img" "digest $T/fifo" "copy $T/a.img $T/fifo"; do
    rc=0
    # shellcheck disable=SC2086  # the paths have no spaces
    within 20 "$FERRY" $args 2> "$T/err" || rc=$?
    assert_eq 3 "$rc" "exit code of ferry $args"
    assert_eq "ferry: cannot open $T/fifo: not a regular file or a block device" "$(cat "$T/err")" \
        "message of ferry $args"
done
[ ! -e "$T/c.img" ] || fail "ferry copy of a FIFO created its DST"
