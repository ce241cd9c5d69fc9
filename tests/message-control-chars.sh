#!/usr/bin/env bash
# A name with control characters (a newline, a carriage return, an escape)
# cannot forge a line: every message prints them escaped, as ls -b does,
# and stays one line.  A relay's address, a stream mode's export, ferry
# copy's SRC, and the nc personality's.
. "$(dirname "$0")/lib.sh"
forged=$'x\nferry: all good\r\e[2K'
escaped='x\nferry: all good\r\x1b[2K'

one_line () {  # WHAT EXPECTED_RC TEXT: $T/err is one line holding TEXT
    assert_eq "$2" "$rc" "$1: exit code"
    assert_eq 1 "$(wc -l < "$T/err")" "$1: lines on stderr ($(cat -A "$T/err"))"
    assert_contains "$T/err" "$3" "$1's message"
    ! grep -q $'\e' "$T/err" || fail "$1: an escape character reached stderr"
}

rc=0
: | within 10 "$FERRY" "unix:$T/$forged" 2> "$T/err" || rc=$?
one_line "a relay's address" 3 "ferry: cannot connect to '$T/$escaped': No such file or directory"

rc=0
within 10 "$FERRY" --nbd-receive="nbd://$forged" < /dev/null 2> "$T/err" || rc=$?
one_line "a stream mode's export" 3 "ferry: cannot connect to nbd://$escaped: "

rc=0
within 10 "$FERRY" copy "$T/$forged" "$T/b.img" 2> "$T/err" || rc=$?
one_line "ferry copy's SRC" 3 "ferry: cannot open $T/$escaped: No such file or directory"

rc=0
: | within 10 "$FERRY" --compat=nc -U "$T/$forged" 2> "$T/err" || rc=$?
one_line "nc -U (netcat's exit 1)" 1 "nc: cannot connect to '$T/$escaped'"
