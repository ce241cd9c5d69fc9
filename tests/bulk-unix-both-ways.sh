#!/usr/bin/env bash
# 256 MiB each way at once over a UNIX socket.  socat is the server: it
# sends its file while it reads ferry's, and closes once both are done.
. "$(dirname "$0")/lib.sh"
need socat sha256sum

size=$((256 * 1024 * 1024))
make_data up "$size"
make_data down "$size"

bg socat -t 60 "UNIX-LISTEN:$T/s.sock" \
    SYSTEM:"cat '$T/down' & cat > '$T/server-got'; wait"
server=$LAST_PID
wait_for_socket "$T/s.sock"

cat "$T/up" | within 60 "$FERRY" "unix:$T/s.sock" | cat > "$T/client-got"
rc=${PIPESTATUS[1]}
assert_eq 0 "$rc" "ferry exit code"
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/down" "$T/client-got" "download"
