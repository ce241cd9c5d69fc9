#!/usr/bin/env bash
# nbdkit --tls=require with a PSK: once the server acknowledges STARTTLS,
# ferry --nbd relays the rest untouched and its stats say so.  The copy
# (nbdcopy with tls-psk-file, through a ferry listener that runs --nbd per
# connection) matches a direct one.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy sha256sum
nbdkit --dump-config | grep -q '^tls=yes' || skip "nbdkit built without TLS"

printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$T/keys.psk"
bg nbdkit -f -U "$T/src.sock" --tls=require --tls-psk="$T/keys.psk" pattern size=16M
wait_for_socket "$T/src.sock"
bg "$FERRY" -l -k --nbd --stats-file "$T/stats" "unix:$T/ferry.sock" "unix:$T/src.sock"
wait_for_socket "$T/ferry.sock"

uri () { echo "nbds+unix://alice@/?socket=$1&tls-psk-file=$T/keys.psk"; }
within 60 nbdcopy "$(uri "$T/src.sock")" "$T/direct.raw" || fail "direct TLS copy failed"
within 60 nbdcopy "$(uri "$T/ferry.sock")" "$T/via.raw" || fail "TLS copy through ferry failed"
assert_same_file "$T/direct.raw" "$T/via.raw" "copy through ferry"
cat "$T/stats" >&2
assert_contains "$T/stats" "tls=yes TLS: not inspected" "stats after STARTTLS"
