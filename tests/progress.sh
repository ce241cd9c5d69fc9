#!/usr/bin/env bash
# --progress: under script(1), stderr a terminal, the line is redrawn with
# "\r" at most 4 times a second in the documented format, with percent and
# ETA for a regular-file stdin, and ends with the whole run's figures and a
# newline.  With stderr not a terminal, --progress prints nothing and
# --progress=always still draws.  The relay's bytes arrive whole.
. "$(dirname "$0")/lib.sh"
need script socat

size=$((8 * 1024 * 1024))
make_data up "$size"
make_data reply 100000
# The server reads nothing for 1.5 s (the upload stalls in small buffers),
# then everything, then replies.
start_server () {
    listen_addresses unix
    bg socat -t 30 "$SOCAT_LISTEN" \
        SYSTEM:"sleep 1.5; cat > '$T/server-got'; cat '$T/reply'"
    wait_for_listener unix "$LAST_PID"
}

# ELAPSED  up BYTES RATE PERCENT [ETA]  down BYTES RATE
size_re='[0-9.]+ (B|KiB|MiB|GiB)'
rate_re='[0-9.]+ MiB/s'
time_re='[0-9]+:[0-9]{2}:[0-9]{2}'
line_re="^$time_re  up $size_re $rate_re [0-9]{1,3}%( ETA ($time_re|-:--:--))?  down $size_re $rate_re *\$"

start_server
server=$LAST_PID
start_ms=$(date +%s%3N)
within 60 script -qec "'$FERRY' --progress -b 64K --sndbuf=64K '$FERRY_ADDR' < '$T/up' > '$T/got'; echo rc=\$?" \
    /dev/null > "$T/tty"
ms=$(($(date +%s%3N) - start_ms))
wait "$server" || fail "socat server exited $?"
assert_same_file "$T/up" "$T/server-got" "upload"
assert_same_file "$T/reply" "$T/got" "reply"
grep -q 'rc=0' "$T/tty" || fail "ferry --progress failed: $(cat -v "$T/tty")"

# The terminal's bytes up to the end of ferry's line, one redraw a line.
sed -n '1{s/\r$//;p;q}' "$T/tty" | tr '\r' '\n' | sed '/^$/d' > "$T/lines"
n=$(wc -l < "$T/lines")
[ "$n" -ge 3 ] || fail "expected redraws over a 1.5 s stall, got $n: $(cat -v "$T/tty")"
# One per 250 ms, and the last one.
[ "$n" -le $((ms / 250 + 1)) ] || fail "$n redraws in $ms ms: more than 4 a second"
while IFS= read -r line; do
    [[ $line =~ $line_re ]] || fail "progress line '$line' does not match '$line_re'"
done < "$T/lines"
# Before the end: a percent below 100 with an ETA; at the end, the totals.
grep -Eq " up [^%]* [0-9]{1,2}% ETA " "$T/lines" || fail "no partial upload with ETA: $(cat "$T/lines")"
last=$(tail -1 "$T/lines" | sed 's/ *$//')
[[ $last =~ "  up 8.00 MiB "[0-9.]+" MiB/s 100%  down 97.7 KiB "[0-9.]+" MiB/s"$ ]] ||
    fail "last line '$last': expected 8.00 MiB up at 100% and 97.7 KiB down, no ETA"
# The line ends with a newline before anything else on the terminal.
assert_eq "rc=0" "$(sed -n '2{s/\r$//;p}' "$T/tty")" "what follows the line"

# stderr not a terminal: nothing.
start_server
cat "$T/up" | within 30 "$FERRY" --progress "$FERRY_ADDR" > "$T/got" 2> "$T/err"
assert_eq 0 "${PIPESTATUS[1]}" "ferry --progress exit code"
[ ! -s "$T/err" ] || fail "--progress printed on a non-terminal stderr: $(cat -v "$T/err")"
assert_same_file "$T/reply" "$T/got" "reply without a terminal"

# --progress=always: drawn anyway, ended by a newline; stdin a pipe, so no
# percent.
start_server
cat "$T/up" | within 30 "$FERRY" --progress=always "$FERRY_ADDR" > "$T/got" 2> "$T/err"
assert_eq 0 "${PIPESTATUS[1]}" "ferry --progress=always exit code"
tr '\r' '\n' < "$T/err" | sed '/^$/d' | tail -1 > "$T/last"
grep -Eq "^$time_re  up 8.00 MiB $rate_re  down 97.7 KiB $rate_re *\$" "$T/last" ||
    fail "--progress=always: last line '$(cat "$T/last")'"
[ "$(tail -c 1 "$T/err" | od -An -c | tr -d ' ')" = '\n' ] || fail "the line does not end with a newline"

# Bad values and modes: usage errors.
set +e
"$FERRY" --progress=sometimes unix:/nonexistent 2> "$T/err"; rc=$?
set -e
assert_ferry_error 2 "$rc" "$T/err" "invalid --progress 'sometimes': expected auto, always, never or fd:N"
set +e
"$FERRY" --progress -l unix:"$T/a.sock" unix:"$T/b.sock" 2> "$T/err"; rc=$?
set -e
assert_ferry_error 2 "$rc" "$T/err" "--progress needs a relay with stdio"
