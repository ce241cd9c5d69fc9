#!/usr/bin/env bash
# bench/run.sh --quick still works, so the benchmark does not rot: it builds
# its tools, runs every scenario with every helper it finds, prints its
# table, and every transfer through ferry, nc, socat and the splice reference
# arrives intact.  No figure is checked: nothing here asserts speed.
# The slow-reader scenario sampled some helper's RSS while it ran (not
# necessarily ferry's: a splicing helper's stdout pipe can take all 4 MiB of
# socket pages, and it may exit before the first sample).
# virt-ssh-helper loses data by design, so only its presence is checked.
# It takes ~15 s on an idle machine; the deadline is only a hang guard for a
# heavily loaded one.
. "$(dirname "$0")/lib.sh"
need cc python3 nc socat

bench=$(cd "$(dirname "$0")/../bench" && pwd)
within 150 "$bench/run.sh" --quick --ferry "$FERRY" --build-dir "$T/build" \
    --raw "$T/raw.tsv" > "$T/out" 2> "$T/err" ||
    fail "bench/run.sh --quick exited $?: $(tail -n 5 "$T/err")"

for text in "scenario" "x splice" "verified: " "up, UNIX" "down, UNIX" "both, UNIX" \
            "up, TCP" "down, TCP" "both, TCP" "ping-pong UNIX" "split ping TCP" \
            "slow reader, UNIX" "RSS during the transfer"; do
    assert_contains "$T/out" "$text" "bench table"
done

# One record per scenario and helper: 9 scenarios, virt-ssh-helper (UNIX
# only) in 5 of them.
field () {  # NAME RECORD
    tr '\t' '\n' <<< "$2" | sed -n "s/^$1=//p"
}
runs=0 ferry_runs=0 rss_sampled=0
while IFS= read -r rec; do
    runs=$((runs + 1))
    helper=$(field helper "$rec") scenario=$(field scenario "$rec")
    [ "$helper" = virt-ssh-helper ] && continue
    assert_eq ok "$(field data "$rec")" "$scenario / $helper: data ($(field note "$rec"))"
    case $helper in
    ferry*)
        ferry_runs=$((ferry_runs + 1))
        assert_eq 0 "$(field status "$rec")" "$scenario / $helper: exit status"
        assert_eq 0 "$(field waited_for_stdin "$rec")" "$scenario / $helper: exits on socket EOF" ;;
    esac
    if [ "$scenario" = slow-unix ] && [ "$(field rss_samples "$rec")" -gt 0 ]; then
        rss_sampled=$((rss_sampled + 1))
    fi
done < "$T/raw.tsv"

helpers=$(grep -c . <<< "$(cut -f3 "$T/raw.tsv" | sort -u)")
expected=$((9 * helpers))
grep -q 'helper=virt-ssh-helper' "$T/raw.tsv" && expected=$((expected - 4))
assert_eq "$expected" "$runs" "runs recorded"
[ "$ferry_runs" -ge 9 ] || fail "ferry ran $ferry_runs times, expected 9 or more"
[ "$rss_sampled" -ge 1 ] || fail "slow-unix: no helper's RSS was sampled during its transfer"
