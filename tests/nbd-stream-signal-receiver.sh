#!/usr/bin/env bash
# A receiver stopped by a signal, as a user of nbdcopy expects of a copy
# interrupted with ^C or kill:
#  - SIGTERM, SIGINT, SIGHUP: it reads no more of the stream, lets the
#    writes in flight end, flushes every connection (nbdkit's log shows
#    it), and names the offset up to which the destination is complete:
#    the end of the last record it had read whole, where cmp of source and
#    destination agrees; exit 128 + the signal;
#  - SIGUSR1 meanwhile prints the -v summary so far (the test waits on it);
#  - a second signal while writes are slow to end: out at once, one line,
#    "(not flushed)";
#  - a signal after the END record changes nothing: exit 0 at EOF;
#  - one while a server is slow to close (after the copy): out at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((32 * 1024 * 1024))
stored_source $size 7 50
len=$(stat -c %s "$T/s.stream")

has_read () {  # PID BYTES: SIGUSR1's summary says wire=BYTES
    kill -USR1 "$1"
    sleep 0.1
    [ "$(summary_field "$T/err" wire)" = "$2" ]
}

# A receiver into DST of the stream's first BYTES, through a FIFO whose
# writer then stays silent; returns once it has read them all.
feed () {  # DST BYTES
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    sh -c 'head -c "$1" "$2"; exec sleep 60' sh "$2" "$T/s.stream" > "$T/fifo" & track $!
    writer=$!
    $DFL "$FERRY" --nbd-receive="$(uri "$1")" < "$T/fifo" 2> "$T/err" & track $!
    receiver=$!
    wait_until 10 catches_signals "$receiver"
    wait_until 10 has_read "$receiver" "$2"
}

i=0
for sig in TERM INT HUP; do
    i=$((i + 1))
    serve "dst$i" --filter=log memory size=$size logfile="$T/dst$i.log"
    cut=$((len * i / 4 + 4321))   # inside a record
    want=$(python3 "$CHECK" applied "$T/s.stream" "$cut")
    [ "$want" -gt 0 ] || fail "no whole record in the first $cut bytes"
    feed "dst$i" "$cut"
    kill -"$sig" "$receiver"
    wait_rc 10 "$receiver"
    assert_eq $((128 + $(kill -l "$sig"))) "$rc" "exit code after SIG$sig"
    assert_eq "ferry: stopped by SIG$sig; $(uri "dst$i") is complete up to offset $want (flushed)" \
        "$(tail -1 "$T/err")" "the last line after SIG$sig"
    grep -q ' Flush ' "$T/dst$i.log" || fail "SIG$sig: no flush in nbdkit's log"
    nbdcopy "$(uri "dst$i")" "$T/dst.raw"
    cmp -n "$want" "$T/src.raw" "$T/dst.raw" || fail "SIG$sig: not complete up to $want"
    rm -f "$T/dst.raw"
done

# Writes that take 5 s each (one nbdkit thread): SIGTERM waits for them,
# SIGINT after it does not.
serve slow -t 1 --filter=delay memory size=$size wdelay=5
feed slow $((len / 2))
kill -TERM "$receiver"
sleep 0.3
start=$(now_ms)
kill -INT "$receiver"
wait_rc 10 "$receiver"
took=$(($(now_ms) - start))
assert_eq 143 "$rc" "exit code after SIGTERM, then SIGINT"
last=$(tail -1 "$T/err")
[[ $last =~ ^"ferry: stopped by SIGTERM, then SIGINT: exiting at once; $(uri slow) is complete up to offset "([0-9]+)" (not flushed)"$ ]] ||
    fail "the line after a second signal: $last"
[ "$took" -lt 2000 ] || fail "a second signal took $took ms"
nbdcopy "$(uri slow)" "$T/dst.raw"
cmp -n "${BASH_REMATCH[1]}" "$T/src.raw" "$T/dst.raw" || fail "not complete up to ${BASH_REMATCH[1]}"

# The whole stream, END included, its writer still open: SIGTERM then EOF.
serve whole memory size=$size
feed whole "$len"
kill -TERM "$receiver"
sleep 0.3
kill "$writer"
wait_rc 10 "$receiver"
assert_eq 0 "$rc" "exit code after a signal once END was read"
nbdcopy "$(uri whole)" "$T/whole.raw"
cmp "$T/src.raw" "$T/whole.raw" || fail "the copy signalled after END differs"

# A destination slow to close after the copy (nbdkit's delay-close, 10 s
# per connection): a signal ends the wait at once.
serve lingering --filter=delay memory size=$size delay-close=10
lingering=$LAST_PID
"$FERRY" --nbd-receive="$(uri lingering)" < "$T/s.stream" 2> "$T/err" & track $!
receiver=$!
wait_until 10 catches_signals "$receiver"
# The whole stream read (stdin is the file: its offset says), then a
# moment for the last writes and the flush.
read_all () { [ "$(awk '/^pos:/ { print $2 }' "/proc/$receiver/fdinfo/0")" -eq "$(stat -c %s "$T/s.stream")" ]; }
wait_until 20 read_all
sleep 0.5
kill -TERM "$receiver"
wait_rc 3 "$receiver"
assert_eq 143 "$rc" "exit code after SIGTERM while disconnecting"
assert_eq "ferry: stopped by SIGTERM while disconnecting from $(uri lingering)" "$(cat "$T/err")" \
    "the line after SIGTERM while disconnecting"
kill -9 "$lingering"                    # not 10 s more for its close

# The same slow close after a damaged stream: the receiver, already
# flushed, does not wait for it, so no signal can replace its message and
# its exit code.
serve lingering2 --filter=delay memory size=$size delay-close=10
lingering=$LAST_PID
head -c $((len / 2)) "$T/s.stream" > "$T/half.stream"
rc=0
within 5 "$FERRY" --nbd-receive="$(uri lingering2)" < "$T/half.stream" 2> "$T/err" || rc=$?
assert_ferry_error 21 "$rc" "$T/err" "stream truncated"
assert_contains "$T/err" "is complete up to offset" "the truncated stream's line"
kill -9 "$lingering"
