#!/usr/bin/env bash
# `ferry ADDR | head -c 20`: the reader takes its bytes and exits while
# the server has more to say, but ferry holds none of it yet.  When the
# server then just closes, every byte ferry read was delivered: the
# failed write at the socket's EOF (a splice into a pipe nobody reads
# fails even with nothing to move; the copying path writes nothing there)
# is no error, so exit 0 and not a word, as nc and socat.  When the server sends more first, those bytes are read
# and lost: one line with the count, exit 4 (1 as nc).  Over UNIX and TCP,
# as ferry and as nc.
. "$(dirname "$0")/lib.sh"
need socat

for family in unix tcp; do
    listen_addresses "$family"
    if [ "$family" = unix ]; then
        nc_args=(-U "$T/s.sock")
    else
        nc_args=(127.0.0.1 "${FERRY_ADDR##*:}")
    fi
    for late in "" late-data; do
        # 1000 bytes, then (once the reader is gone) LATE, then the close.
        bg socat -t 30 "$SOCAT_LISTEN,fork" SYSTEM:"head -c 1000 /dev/urandom; \
            while [ ! -e '$T/reader-gone' ]; do sleep 0.05; done; printf %s '$late'"
        server=$LAST_PID
        wait_for_listener "$family" "$server"
        for personality in ferry nc; do
            what="$family, $personality, late '$late'"
            if [ "$personality" = ferry ]; then
                cmd=("$FERRY" "$FERRY_ADDR")
                lost_rc=4
            else
                cmd=("$FERRY" --compat=nc "${nc_args[@]}")
                lost_rc=1
            fi
            rm -f "$T/reader-gone"
            # The reader is gone only once nothing holds the pipe's read
            # end: the group's own stdin is closed before it says so (a
            # write that came before the group's exit went into the pipe,
            # and ferry exited 0, under load in .ci/run).
            within 10 "${cmd[@]}" < /dev/null 2> "$T/err" |
                { head -c 20 > "$T/got"; exec 0<&-; touch "$T/reader-gone"; }
            rc=${PIPESTATUS[0]}
            assert_eq 20 "$(stat -c %s "$T/got")" "$what: bytes the reader took"
            if [ -z "$late" ]; then
                assert_eq 0 "$rc" "$what: exit code"
                assert_eq "" "$(cat "$T/err")" "$what: stderr"
            else
                assert_ferry_error "$lost_rc" "$rc" "$T/err" \
                    "$personality: cannot write to stdout: Broken pipe (1000 bytes delivered, ${#late} buffered bytes not delivered)"
                assert_eq 1 "$(wc -l < "$T/err")" "$what: lines on stderr"
            fi
        done
        kill "$server"
        wait "$server" 2> /dev/null || true
    done
done
