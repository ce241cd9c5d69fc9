#!/usr/bin/env bash
# End of stream, remote first: the server half-closes at once, and reads
# only 1 s later (it is ferry -l with an empty stdin and a reader that
# starts late).  That ends the download only: ferry closes its stdout at
# once (the test's reader sees EOF with stdin still flowing) and keeps
# uploading until stdin's EOF.  The server receives all of stdin, and both
# ferrys exit 0.
. "$(dirname "$0")/lib.sh"
size=$((8 * 1024 * 1024))
make_data up "$size"
listen_addresses unix
mkfifo "$T/server-out"
"$FERRY" -l "$FERRY_ADDR" < /dev/null > "$T/server-out" & track $!
server=$LAST_PID
sh -c 'sleep 1; exec cat' < "$T/server-out" > "$T/server-got" & track $!
reader=$LAST_PID
wait_for_listener unix

exec {in}< "$T/up"
within 20 "$FERRY" "$FERRY_ADDR" <&"$in" | cat > "$T/got"
assert_eq 0 "${PIPESTATUS[0]}" "ferry exit code"
consumed=$(awk '/^pos:/ { print $2 }' "/proc/$$/fdinfo/$in")
wait_exit 10 "$server" || fail "ferry -l exited $?"
wait_exit 10 "$reader" || fail "the server's reader exited $?"
assert_eq "$size" "$consumed" "bytes of stdin ferry read after the server's half-close"
assert_same_file "$T/up" "$T/server-got" "upload after the server's half-close"
assert_eq 0 "$(stat -c %s "$T/got")" "bytes on stdout"
echo "ferry read all $size bytes after the server's half-close, and delivered them"
