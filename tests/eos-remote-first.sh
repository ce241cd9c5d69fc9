#!/usr/bin/env bash
# End of stream, remote first: the server half-closes at once, and reads
# only 1 s later (it is ferry -l with an empty stdin and a reader that
# starts late).  ferry must stop reading stdin but still deliver every
# byte it had read: what the server receives is exactly the part of stdin
# ferry consumed (stdin is a regular file whose offset the test shares),
# and ferry exits 0 without waiting for the rest of stdin.
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
[ "$consumed" -lt "$size" ] || fail "ferry read all of stdin after the server's EOF"
assert_eq "$consumed" "$(stat -c %s "$T/server-got")" "bytes delivered vs bytes ferry read"
head -c "$consumed" "$T/up" | cmp -s - "$T/server-got" || fail "delivered bytes differ from stdin"
assert_eq 0 "$(stat -c %s "$T/got")" "bytes on stdout"
echo "ferry read $consumed of $size bytes, and delivered them all"
