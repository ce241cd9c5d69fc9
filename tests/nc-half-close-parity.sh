#!/usr/bin/env bash
# The end-of-stream scenarios under ferry --compat=nc and under
# netcat-openbsd itself, in the same run, over UNIX and TCP (both with -N;
# ferry's nc always half-closes at stdin's EOF):
#  - half-close-peer-first: the server replies, half-closes, reads on; both
#    keep sending stdin after the network's EOF: the server gets all of it,
#    exit 0.
#  - peer-closes: the server sends 4 MiB and closes, stdin open and idle.
#    Over UNIX (HUP) both exit 0 at once; over TCP both are still running
#    2 s later and exit 0 at stdin's EOF.  Same bytes on stdout.
#  - peer-closes-while-uploading: the server closes unread while stdin
#    produces.  Neither hangs.  netcat exits 0 without a word although bytes
#    were lost; ferry's nc says how many and exits 1 (on purpose: see
#    compat-nc.c).
. "$(dirname "$0")/lib.sh"
need nc
nc -h 2>&1 | grep -q 'OpenBSD netcat' || skip "nc is not netcat-openbsd"
make_data up $((16 * 1024 * 1024))
make_data down $((4 * 1024 * 1024))
printf x > "$T/reply"

for family in unix tcp; do
    for impl in netcat ferry; do
        listen_addresses "$family"
        if [ "$family" = unix ]; then args=(-U "${FERRY_ADDR#unix:}")
        else args=(127.0.0.1 "${FERRY_ADDR##*:}"); fi
        nc=(nc -N)
        [ "$impl" = ferry ] && nc=("$FERRY" --compat=nc -N)
        what="$family, $impl"

        # half-close-peer-first
        rm -f "$T/server-got"
        eos_peer listen "$FERRY_ADDR" half-close-first "$T/reply" "$T/server-got"
        server=$LAST_PID
        wait_for_listener "$family" "$server"
        rc=0; within 30 "${nc[@]}" "${args[@]}" < "$T/up" > "$T/got" || rc=$?
        assert_eq 0 "$rc" "$what, half-close-peer-first: exit code"
        wait_exit 10 "$server" || fail "$what: server exited $?"
        assert_eq "$(size_sum "$T/up")" "$(cat "$T/server-got")" "$what, half-close-peer-first: upload"
        assert_eq x "$(cat "$T/got")" "$what, half-close-peer-first: reply"

        # peer-closes
        silent_fifo "in-$family-$impl"
        writer=$LAST_PID
        eos_peer listen "$FERRY_ADDR" send-close "$T/down"
        server=$LAST_PID
        wait_for_listener "$family" "$server"
        "${nc[@]}" "${args[@]}" < "$T/in-$family-$impl" > "$T/got" & track $!
        client=$LAST_PID
        wait_exit 10 "$server" || fail "$what: server exited $?"
        if [ "$family" = tcp ]; then
            sleep 2
            kill -0 "$client" 2>/dev/null || fail "$what, peer-closes: ended with stdin open"
            kill "$writer"
        fi
        rc=0; wait_exit 2 "$client" || rc=$?
        assert_eq 0 "$rc" "$what, peer-closes: exit code"
        assert_same_file "$T/down" "$T/got" "$what, peer-closes: download"
        kill "$writer" 2>/dev/null || true

        # peer-closes-while-uploading
        eos_peer listen "$FERRY_ADDR" close-unread 1
        server=$LAST_PID
        wait_for_listener "$family" "$server"
        rc=0
        cat /dev/zero | within 10 "${nc[@]}" "${args[@]}" > /dev/null 2> "$T/err" || rc=$?
        wait_exit 5 "$server" || fail "$what: server exited $?"
        if [ "$impl" = netcat ]; then
            assert_eq 0 "$rc" "$what, peer-closes-while-uploading: exit code"
        else
            assert_eq 1 "$rc" "$what, peer-closes-while-uploading: exit code"
            grep -Eq '^nc: cannot write to .*\([0-9]+ bytes delivered, [1-9][0-9]* buffered bytes not delivered\)$' \
                "$T/err" || fail "$what: no count of lost bytes in: $(cat "$T/err")"
        fi
    done
done
