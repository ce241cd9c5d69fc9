#!/usr/bin/env bash
# 256 MiB each way at once, over UNIX and over TCP, each side half-closing
# as soon as its own sending is done (the server, eos-peer "both", may
# finish first or last): both directions arrive intact, 3 times in a row
# per family (before issue 12's fix, 4 runs in 5 came up short: 6 runs
# miss it once in 15,000).  The bench's "both" scenario does the same at
# larger sizes.
. "$(dirname "$0")/lib.sh"
need cmp
size=$((256 * 1024 * 1024))
# 3 rounds in the plain build; 2 in the deferred-unref and sanitizer ones.
rounds=${FERRY_BIDIR_ROUNDS:-$([ -n "${FERRY_TEST_PLAIN:-}" ] && echo 3 || echo 2)}
make_data data "$size"
for family in unix tcp; do
    for round in $(seq "$rounds"); do
        listen_addresses "$family"
        rm -f "$T/server-got"
        # Both compare with the file rather than hash: the rounds stay short.
        eos_peer listen "$FERRY_ADDR" both "$T/data" "$T/server-got" "$T/data"
        server=$LAST_PID
        # Without the PID: ss -p would scan every process, each round.
        wait_for_listener "$family"
        within 60 "$FERRY" "$FERRY_ADDR" < "$T/data" 2> "$T/err" |
            cmp - "$T/data" > "$T/client-cmp" 2>&1
        rcs=("${PIPESTATUS[@]}")
        assert_eq 0 "${rcs[0]}" "$family round $round: ferry exit code ($(cat "$T/err"))"
        assert_eq 0 "${rcs[1]}" "$family round $round: download ($(cat "$T/client-cmp"))"
        wait_exit 30 "$server" || fail "$family round $round: server exited $?"
        assert_eq "$size identical" "$(cat "$T/server-got")" "$family round $round: upload"
    done
done
echo "$rounds rounds of $size bytes each way over UNIX and TCP, all intact"
