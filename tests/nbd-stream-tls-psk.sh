#!/usr/bin/env bash
# nbds+unix:// with tls-psk-file= on both ends: nbdkit --tls=require with a
# PSK serves the source and the destination, ferry --nbd-send | ferry
# --nbd-receive copies one to the other; the bytes (nbdcopy over TLS, cmp)
# and the digests (ferry's three, and python3 hashlib's) agree.  Without the
# key, the server refuses the connection: exit 3, one line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
nbdkit --dump-config | grep -q '^tls=yes' || skip "nbdkit built without TLS"

size=$((64 * 1024 * 1024))
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$T/keys.psk"
serve src --tls=require --tls-psk="$T/keys.psk" sparse-random size=$size seed=3 percent=40
serve dst --tls=require --tls-psk="$T/keys.psk" memory size=$size
tls_uri () { echo "nbds+unix://alice@/?socket=$T/$1.sock&tls-psk-file=$T/keys.psk"; }

within 60 "$FERRY" -v --nbd-send="$(tls_uri src)" 2> "$T/send.err" |
    within 60 "$FERRY" -v --nbd-receive="$(tls_uri dst)" 2> "$T/recv.err"
rc_send=${PIPESTATUS[0]} rc_recv=${PIPESTATUS[1]}
cat "$T/send.err" "$T/recv.err" >&2
assert_eq 0 "$rc_send" "sender exit code"
assert_eq 0 "$rc_recv" "receiver exit code"
nbdcopy "$(tls_uri src)" "$T/src.raw"
nbdcopy "$(tls_uri dst)" "$T/dst.raw"
cmp "$T/src.raw" "$T/dst.raw" || fail "the copy over TLS differs"
want=$(python3 "$CHECK" digest "$T/src.raw" "$size")
assert_eq "$want" "$(summary_field "$T/send.err" digest)" "sender's digest"
assert_eq "$want" "$(summary_field "$T/recv.err" digest)" "receiver's digest"
assert_eq "$want  $(tls_uri dst)" "$("$FERRY" --nbd-digest="$(tls_uri dst)")" \
    "--nbd-digest of the destination"

set +e
"$FERRY" --nbd-send="nbds+unix://alice@/?socket=$T/src.sock" > /dev/null 2> "$T/err"
rc=$?
set -e
assert_ferry_error 3 "$rc" "$T/err" "cannot connect to nbds+unix://alice@/?socket=$T/src.sock"
cat "$T/err" >&2
assert_eq 1 "$(wc -l < "$T/err")" "lines of the refusal"
