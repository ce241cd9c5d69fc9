#!/usr/bin/env bash
# ferry --nbd against things that are not (well-behaved) NBD peers: a real
# sshd, a real web server (answering, and silent), random bytes, truncated
# handshakes and oversize frames from either side.  Each ends ferry at once
# with one clear line and exit code 6.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need nbdkit socat python3

# Client bytes on ferry's stdin come from $T/in-NAME, sent a moment after
# ferry started (a client waits for the server's greeting); a FIFO held
# open here stands for a client that says nothing and does not go away.
mkfifo "$T/quiet"
exec 3<>"$T/quiet"

expect_violation () {  # NAME STDIN MESSAGE ADDRESS [FERRY OPTIONS...]
    local name=$1 input=$2 message=$3 address=$4 rc=0
    shift 4
    case $input in
        "$T"/in-*) within 20 "$FERRY" --nbd "$@" "$address" < <(sleep 0.5; cat "$input") \
                       > "$T/out-$name" 2> "$T/err-$name" || rc=$? ;;
        *) within 20 "$FERRY" --nbd "$@" "$address" < "$input" \
               > "$T/out-$name" 2> "$T/err-$name" || rc=$? ;;
    esac
    cat "$T/err-$name" >&2
    assert_eq 6 "$rc" "$name: exit code"
    assert_contains "$T/err-$name" "NBD protocol violation: $message" "$name: message"
}

bytes () {  # FILE PYTHON-EXPRESSION (bytes)
    python3 -c "import struct, sys; sys.stdout.buffer.write($2)" > "$1"
}
IHAVEOPT='b"IHAVEOPT"'
greeting="b'NBDMAGIC' + $IHAVEOPT + struct.pack('>H', 3)"
flags="struct.pack('>I', 3)"

# An ssh server: it speaks first.
start_sshd nbd "/usr/bin:/bin"
expect_violation sshd /dev/null \
    'server sent no NBD greeting after 0 bytes: "SSH-2.0-OpenSSH_"; this looks like an ssh server' \
    "tcp:127.0.0.1:$SSHD_PORT"

# A web server answers whatever the client sent first.
port=$(free_port)
bg python3 -m http.server --bind 127.0.0.1 --directory "$T" "$port"
wait_for_port "$port"
printf 'GET / HTTP/1.0\r\n\r\n' > "$T/in-http"
expect_violation http "$T/in-http" \
    'server sent no NBD greeting after 0 bytes: "HTTP/1.0 200 OK\r"; this looks like a web server' \
    "tcp:127.0.0.1:$port"
# ... and says nothing to a client waiting for a greeting.
expect_violation http-silent "$T/quiet" 'server sent no NBD greeting within 1 seconds' \
    "tcp:127.0.0.1:$port" --nbd-greeting-timeout 1

# Random bytes.
head -c 4096 /dev/urandom > "$T/random"
bg socat "UNIX-LISTEN:$T/random.sock,fork" "OPEN:$T/random"
wait_for_socket "$T/random.sock"
expect_violation random "$T/quiet" 'server sent no NBD greeting after 0 bytes' "unix:$T/random.sock"

# Truncated greetings.
bg socat "UNIX-LISTEN:$T/cut.sock" SYSTEM:"printf NBDMAGICIHAV"
wait_for_socket "$T/cut.sock"
expect_violation cut-greeting "$T/quiet" \
    'server closed the connection in the middle of the greeting (after 12 bytes)' "unix:$T/cut.sock"
bytes "$T/greeting" "$greeting"
bg socat "UNIX-LISTEN:$T/cut2.sock" "OPEN:$T/greeting"
wait_for_socket "$T/cut2.sock"
expect_violation cut-handshake "$T/quiet" \
    'server closed the connection before the handshake finished' "unix:$T/cut2.sock"

# A real NBD server, and clients that break the rules.
bg nbdkit -f -U "$T/nbd.sock" memory size=64M
wait_for_socket "$T/nbd.sock"
bytes "$T/in-cut-option" "$flags + $IHAVEOPT + struct.pack('>I', 7)"
expect_violation cut-option "$T/in-cut-option" \
    'client closed the connection in the middle of a header' "unix:$T/nbd.sock"
bytes "$T/in-big-option" "$flags + $IHAVEOPT + struct.pack('>II', 7, 70000) + bytes(70000)"
expect_violation big-option "$T/in-big-option" \
    'client sent NBD_OPT_GO (7) with 70000 bytes of data (limit 65536)' "unix:$T/nbd.sock"
bytes "$T/in-big-write" "$flags + $IHAVEOPT + struct.pack('>II', 1, 0)
    + struct.pack('>IHHQQI', 0x25609513, 0, 1, 1, 0, 64 << 20)"
expect_violation big-write "$T/in-big-write" \
    'client sent a write request of 67108864 bytes (limit 33554432)' "unix:$T/nbd.sock"
bytes "$T/in-early-request" "$flags + struct.pack('>IHHQQI', 0x25609513, 0, 0, 1, 0, 512)"
expect_violation early-request "$T/in-early-request" \
    'client sent a request before negotiation finished' "unix:$T/nbd.sock"

# A server whose option reply is too long.
bytes "$T/big-reply" "$greeting + struct.pack('>QIII', 0x3e889045565a9, 7, 3, 100000)"
bg socat "UNIX-LISTEN:$T/big.sock" SYSTEM:"cat '$T/big-reply'; sleep 5"
wait_for_socket "$T/big.sock"
bytes "$T/in-go" "$flags + $IHAVEOPT + struct.pack('>IIIHH', 7, 8, 0, 0, 0)"
expect_violation big-reply "$T/in-go" \
    'server sent a reply to NBD_OPT_GO with 100000 bytes of data (limit 65536)' "unix:$T/big.sock"
