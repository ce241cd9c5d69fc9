#!/usr/bin/env bash
# The server reads nothing and close()s after 1 s while stdin is still
# producing (an endless upload, which has filled ferry's buffer): the peer
# is gone (HUP on UNIX; EPIPE or ECONNRESET on TCP), so ferry stops reading
# stdin at once and exits 4, naming the count of bytes it read and could
# not deliver.  Nothing hangs, on UNIX or TCP.
. "$(dirname "$0")/lib.sh"
for family in unix tcp; do
    listen_addresses "$family"
    eos_peer listen "$FERRY_ADDR" close-unread 1
    server=$LAST_PID
    wait_for_listener "$family" "$server"
    name=${FERRY_ADDR#unix:}      # how messages name the socket
    rc=0
    # ferry's exit ends the upload through SIGPIPE.
    cat /dev/zero | within 10 "$FERRY" "$FERRY_ADDR" > "$T/got" 2> "$T/err" || rc=$?
    wait_exit 5 "$server" || fail "$family: server exited $?"
    assert_eq 4 "$rc" "$family: ferry exit code ($(cat "$T/err"))"
    grep -Eq "^ferry: cannot write to $name: (Broken pipe|Connection reset by peer) \([0-9]+ bytes delivered, [1-9][0-9]* buffered bytes not delivered\)$" \
        "$T/err" || fail "$family: no count of undelivered bytes in: $(cat "$T/err")"
    # The reset can also fail the socket's read first: a line of its own.
    ! grep -v -e "^ferry: cannot \(write to\|read from\) $name: " "$T/err" ||
        fail "$family: unexpected lines on stderr"
    assert_eq 0 "$(stat -c %s "$T/got")" "$family: bytes on stdout"
done
