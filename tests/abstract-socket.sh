#!/usr/bin/env bash
# Abstract UNIX sockets: ferry @NAME and ferry unix:@NAME reach a socat
# server on ABSTRACT-LISTEN:NAME, and ferry -l @NAME serves a socat client.
# No file appears anywhere.
. "$(dirname "$0")/lib.sh"
need socat
make_data up 300000
make_data reply 400000
name=ferry-test-$$-$RANDOM

for address in "@$name" "unix:@$name"; do
    bg socat -t 10 "ABSTRACT-LISTEN:$name" \
        SYSTEM:"cat > '$T/server-got'; cat '$T/reply'"
    wait_for_abstract "$name"
    cat "$T/up" | within 10 "$FERRY" "$address" | cat > "$T/got"
    assert_eq 0 "${PIPESTATUS[1]}" "ferry $address exit code"
    assert_same_file "$T/up" "$T/server-got" "upload to $address"
    assert_same_file "$T/reply" "$T/got" "reply from $address"
done

silent_fifo server-in
"$FERRY" -l "@$name" < "$T/server-in" > "$T/server-got" & track $!
server=$LAST_PID
wait_for_abstract "$name"
within 10 socat -u "OPEN:$T/up" "ABSTRACT-CONNECT:$name" || fail "socat client exited $?"
rc=0; wait_exit 10 "$server" || rc=$?
assert_eq 0 "$rc" "ferry -l @$name exit code"
assert_same_file "$T/up" "$T/server-got" "upload to ferry -l @$name"
