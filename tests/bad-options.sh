#!/usr/bin/env bash
# Usage errors exit 2 with one line that names the offending option or
# argument, before touching any socket.
. "$(dirname "$0")/lib.sh"
check () {  # TEXT ARGS...
    local text=$1 rc=0; shift
    : | within 10 "$FERRY" "$@" 2> "$T/err" || rc=$?
    assert_ferry_error 2 "$rc" "$T/err" "$text"
    assert_eq 1 "$(wc -l < "$T/err")" "lines of the message for: $*"
}
check "ferry: missing ADDRESS"
check "unexpected argument '$T/b'" "$T/a" "$T/b"
# Two arguments are HOST PORT only when they can be nothing else.
check "unexpected argument 'x'" localhost 22 x
check "unexpected argument 'no-such-port!'" localhost no-such-port!
check "unexpected argument '22'" unix:x 22
# netcat's -q SECS: -q is --quiet here, and the line says so.
check "unexpected argument 'example.com': expected ADDRESS, HOST PORT, or -l LISTEN [TARGET] (-q is --quiet; netcat's -q SECS is ferry --compat=nc's)" \
    -q 5 example.com 22
check "ferry: -k/--keep-open needs -l/--listen" -k "$T/a"
check "invalid -b '0'" -b 0 "$T/a"
check "invalid --buffer-size '2G'" --buffer-size 2G "$T/a"
check "invalid --buffer-size '12Q'" --buffer-size 12Q "$T/a"
check "invalid --idle-timeout '-1'" --idle-timeout=-1 "$T/a"
check "invalid --connect-timeout '-5'" --connect-timeout=-5 "$T/a"
check "--idle-timeout" --idle-timeout=abc "$T/a"
check "--bogus" --bogus "$T/a"
# An unknown long option near one of ferry's names says which, in the one
# line that points to --help (issue 26).
check "ferry: Unknown option --stream=2 (did you mean --streams?); see 'ferry --help'" --stream=2 "$T/a"
check "ferry: Unknown option --buffer-szie (did you mean --buffer-size?); see 'ferry --help'" --buffer-szie 1 "$T/a"
check "ferry: Unknown option --strems=2 (did you mean --streams?); see 'ferry copy --help'" copy --strems=2 "$T/a" "$T/b"
check "ferry: Unknown option --bogus; see 'ferry --help'" --bogus "$T/a"
