#!/usr/bin/env bash
# stdin and stdout are regular files, not pipes: splice reads the file and
# writes the other one (file -> pipe -> socket, socket -> pipe -> file).
# stdout opened with O_APPEND cannot be spliced to and must fall back to
# copying, still losing nothing.
. "$(dirname "$0")/lib.sh"
need socat sha256sum

size=$((8 * 1024 * 1024 + 12345))
make_data up "$size"
make_data down "$size"

serve () {  # start a socat server that sends down and stores what it reads in $1
    rm -f "$T/s.sock"
    bg socat -t 30 "UNIX-LISTEN:$T/s.sock" \
        SYSTEM:"cat '$T/down' & cat > '$T/$1'; wait"
    server=$LAST_PID
    wait_for_socket "$T/s.sock"
}

serve server-got
within 60 "$FERRY" "unix:$T/s.sock" < "$T/up" > "$T/client-got" ||
    fail "ferry exited $? with regular files"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload from a regular file"
assert_same_file "$T/down" "$T/client-got" "download into a regular file"

serve server-got2
printf 'kept: ' > "$T/appended"
within 60 "$FERRY" "unix:$T/s.sock" < "$T/up" >> "$T/appended" ||
    fail "ferry exited $? with stdout in append mode"
wait "$server" || fail "socat server exited $?"
{ printf 'kept: '; cat "$T/down"; } > "$T/expected"
assert_same_file "$T/up" "$T/server-got2" "upload (append case)"
assert_same_file "$T/expected" "$T/appended" "download appended to a file"
