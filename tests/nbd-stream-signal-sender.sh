#!/usr/bin/env bash
# A sender (and --nbd-digest) stopped by a signal:
#  - SIGTERM, SIGINT, SIGHUP: it reads no more and starts no more records,
#    waits for the reads in flight, and says how far it sent: the stream it wrote
#    (a regular file here) holds whole records up to exactly that offset,
#    then a STOP record, and a receiver given it (after SIGTERM) says that
#    the sender was stopped and reports the same offset complete, where
#    cmp of source and destination agrees; exit 128 + the signal;
#  - the same into a full pipe, part of a record written: the rest of
#    the record goes once there is room, for up to 5 s;
#  - a second signal while reads are slow to end, or SIGQUIT: out at once,
#    one line;
#  - a signal while the server has not finished the handshake: that is
#    said, and the exit code is the signal's;
#  - --nbd-digest whose reader is gone: a message and exit 4, not a
#    silent exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((256 * 1024 * 1024))
# 16 reads of 2 MiB (32 MiB in flight) every 0.3 s: a signal comes long
# before the end.
serve src --filter=delay pattern size=$size rdelay=300ms
serve ref pattern size=$size
nbdcopy "$(uri ref)" "$T/src.raw"

start_sender () {  # SRC [MODE]: --nbd-send to $T/s.stream, or MODE (--nbd-digest)
    $DFL "$FERRY" "${2:---nbd-send}=$(uri "$1")" > "$T/s.stream" 2> "$T/err" & track $!
    sender=$!
    wait_until 10 catches_signals "$sender"
}
stream_bigger () { [ "$(stat -c %s "$T/s.stream")" -gt "$1" ]; }

i=0
for sig in TERM INT HUP; do
    i=$((i + 1))
    start_sender src
    wait_until 10 stream_bigger $((4 * 1024 * 1024))
    kill -"$sig" "$sender"
    wait_rc 10 "$sender"
    assert_eq $((128 + $(kill -l "$sig"))) "$rc" "exit code after SIG$sig"
    last=$(tail -1 "$T/err")
    [[ $last =~ ^"ferry: stopped by SIG$sig; the image was sent up to offset "([0-9]+)" ("([0-9]+)" bytes written)"$ ]] ||
        fail "the line after SIG$sig: $last"
    sent=${BASH_REMATCH[1]} written=${BASH_REMATCH[2]}
    assert_eq "$(stat -c %s "$T/s.stream")" "$written" "SIG$sig: bytes written"
    assert_eq "$sent" "$(python3 "$CHECK" applied "$T/s.stream" "$written")" \
        "SIG$sig: the offset that the stream's whole records reach"
    [ "$sent" -gt 0 ] && [ "$sent" -lt "$size" ] || fail "SIG$sig: sent up to $sent of $size"
    [ "$sig" = TERM ] || continue      # the same stream: replayed once

    serve "dst$i" memory size=$size
    set +e
    within 30 "$FERRY" --nbd-receive="$(uri "dst$i")" < "$T/s.stream" 2> "$T/recv.err"
    rc=$?
    set -e
    assert_ferry_error 143 "$rc" "$T/recv.err" \
        "ferry: the sender was stopped by SIGTERM; $(uri "dst$i") is complete up to offset $sent (flushed)"
    nbdcopy "$(uri "dst$i")" "$T/dst.raw"
    cmp -n "$sent" "$T/src.raw" "$T/dst.raw" || fail "SIG$sig: not complete up to $sent"
    rm -f "$T/dst.raw"
    kill "$LAST_PID"
done

# Into a pipe that a stopped reader left full, part of a DATA record
# written: SIGTERM waits for room for the rest of it, so the stream still
# ends on a record's boundary, then STOP (it ended inside the payload
# before).
mkfifo "$T/pipe"
cat "$T/pipe" > "$T/p.stream" & track $!
reader=$!
$DFL "$FERRY" --nbd-send="$(uri src)" > "$T/pipe" 2> "$T/err" & track $!
sender=$!
wait_until 10 catches_signals "$sender"
p_stream_bigger () { [ "$(stat -c %s "$T/p.stream")" -gt "$1" ]; }
wait_until 10 p_stream_bigger $((4 * 1024 * 1024))
kill -STOP "$reader"
sleep 0.5
kill -TERM "$sender"
sleep 0.5
kill -0 "$sender" || fail "the stopped sender did not wait for room for its record's rest"
kill -CONT "$reader"
wait_rc 10 "$sender"
assert_eq 143 "$rc" "exit code after SIGTERM, stdout full"
wait_rc 10 "$reader"
[[ $(tail -1 "$T/err") =~ "ferry: stopped by SIGTERM; the image was sent up to offset "([0-9]+)" ("([0-9]+)" bytes written)"$ ]] ||
    fail "the line after SIGTERM, stdout full: $(cat "$T/err")"
sent=${BASH_REMATCH[1]} written=${BASH_REMATCH[2]}
assert_eq "$(stat -c %s "$T/p.stream")" "$written" "stdout full: bytes written"
assert_eq "$sent" "$(python3 "$CHECK" applied "$T/p.stream" "$written")" \
    "stdout full: the offset that the stream's whole records reach"
serve dst_full memory size=$size
set +e
within 30 "$FERRY" --nbd-receive="$(uri dst_full)" < "$T/p.stream" 2> "$T/recv.err"
rc=$?
set -e
assert_ferry_error 143 "$rc" "$T/recv.err" \
    "ferry: the sender was stopped by SIGTERM; $(uri dst_full) is complete up to offset $sent (flushed)"
kill "$LAST_PID"

# A reader that never reads again: the stopped sender gives up waiting
# for room after 5 s, and ends with its line all the same.
mkfifo "$T/pipe2"
cat "$T/pipe2" > /dev/null & track $!
reader=$!
$DFL "$FERRY" --nbd-send="$(uri src)" > "$T/pipe2" 2> "$T/err" & track $!
sender=$!
wait_until 10 catches_signals "$sender"
sleep 0.5
kill -STOP "$reader"
sleep 0.5
kill -TERM "$sender"
start=$SECONDS
wait_rc 15 "$sender"
assert_eq 143 "$rc" "exit code after SIGTERM, stdout never read"
[ $((SECONDS - start)) -ge 4 ] && [ $((SECONDS - start)) -le 8 ] ||
    fail "stdout never read: ended after $((SECONDS - start)) s, not 5"
grep -qE "^ferry: stopped by SIGTERM; the image was sent up to offset [0-9]+ \([0-9]+ bytes written\)$" "$T/err" ||
    fail "the line after SIGTERM, stdout never read: $(cat "$T/err")"
kill -CONT "$reader"

# Reads that take 5 s each (one nbdkit thread: several would race on the
# close, nbdkit 1.32's raw_send_socket assertion): SIGTERM waits for them,
# a SIGINT after it, or SIGQUIT alone, does not.
serve slow -t 1 --filter=delay pattern size=$size rdelay=5
for sigs in "TERM INT" QUIT; do
    start_sender slow
    wait_until 10 stream_bigger 0      # connected: the stream's header is out
    start=$(now_ms)
    # The second signal once the first one's STOP record is out.
    for sig in $sigs; do
        kill -"$sig" "$sender"
        [ "$sig" != TERM ] || wait_until 5 stream_bigger 36
    done
    wait_rc 10 "$sender"
    took=$(($(now_ms) - start))
    case $sigs in
    QUIT) code=131 why="SIGQUIT" ;;
    *)    code=143 why="SIGTERM, then SIGINT" ;;
    esac
    assert_eq $code "$rc" "exit code after $sigs"
    # The header, and the STOP record that the first signal wrote (SIGQUIT's
    # cut writes none).
    [ "$sigs" = QUIT ] && written=36 || written=60
    assert_eq "ferry: stopped by $why: exiting at once; the image was sent up to offset 0 ($written bytes written)" \
        "$(tail -1 "$T/err")" "the line after $sigs"
    [ "$took" -lt 2000 ] || fail "$sigs took $took ms"
done

# --nbd-digest: a signal says how far it read; its reader gone is an error.
start_sender src --nbd-digest
kill -TERM "$sender"
wait_rc 10 "$sender"
# (The signal may come while it connects: then it says so.)
assert_ferry_error 143 "$rc" "$T/err" "stopped by SIGTERM"
# The URI is matched as a fixed string: its '+' and '?' are not a pattern.
grep -qE "^ferry: stopped by SIGTERM; the image was read up to offset [0-9]+$" "$T/err" ||
    grep -qxF "ferry: stopped by SIGTERM while connecting to $(uri src)" "$T/err" ||
    fail "--nbd-digest's line: $(cat "$T/err")"
set +e
"$FERRY" --nbd-digest="$(uri ref)" 2> "$T/err" | true
rc=${PIPESTATUS[0]}
set -e
# Its reader gone while it reads (the digest ends early) or as it ends.
assert_ferry_error 4 "$rc" "$T/err" "cannot write the digest to stdout: "
grep -qE "stdout: (its reader has gone \(the image was read up to offset [0-9]+\)|Broken pipe)$" "$T/err" ||
    fail "--nbd-digest without a reader: $(cat "$T/err")"

# A server slow to open the export: the signal ends the handshake.
serve hang --filter=delay pattern size=$size delay-open=10
start_sender hang
sleep 0.3
kill -HUP "$sender"
wait_rc 5 "$sender"
assert_eq 129 "$rc" "exit code after SIGHUP while connecting"
assert_eq "ferry: stopped by SIGHUP while connecting to $(uri hang)" "$(cat "$T/err")" \
    "the line after SIGHUP while connecting"
