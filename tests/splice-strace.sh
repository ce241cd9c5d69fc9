#!/usr/bin/env bash
# With pipes on stdio and a UNIX socket, the default path moves the bytes
# with splice(2) and reads/writes none of them; --no-splice and
# FERRY_NO_SPLICE=1 copy with read/write and never splice.  The variable
# also works under the nc personality, which has no --no-splice.
. "$(dirname "$0")/lib.sh"
need socat strace sha256sum
unset FERRY_NO_SPLICE   # this test chooses the path itself

size=$((4 * 1024 * 1024))
make_data up "$size"
make_data down "$size"

# run NAME [ENV=VALUE...] -- FERRY-ARGS...: one transfer both ways under
# strace, to the server listening on $T/s.sock
run () {
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
    rm -f "$T/s.sock"
    bg socat -t 30 "UNIX-LISTEN:$T/s.sock" \
        SYSTEM:"cat '$T/down' & cat > '$T/$name.server'; wait"
    local server=$LAST_PID
    wait_for_socket "$T/s.sock"
    cat "$T/up" | within 60 env "${envs[@]}" "${STRACE_ENV[@]}" strace -f -qq -o "$T/$name.trace" \
        -e trace=splice,read,write,readv,writev "$FERRY" "$@" |
        cat > "$T/$name.client"
    [ "${PIPESTATUS[1]}" = 0 ] || fail "$name: ferry exited ${PIPESTATUS[1]}"
    wait "$server" || fail "$name: socat server exited $?"
    assert_same_file "$T/up" "$T/$name.server" "$name: upload"
    assert_same_file "$T/down" "$T/$name.client" "$name: download"
}

# Syscalls NAME made on a relay fd, with a byte count ("= N" with N > 0):
# the 8-byte eventfd reads/writes of glib's main loop do not count.
moved () {  # TRACE SYSCALL
    grep -E "^[0-9]+ +$2\(" "$1" | grep -vE ', 8\) += 8$' | grep -cE '= [1-9][0-9]*$' || true
}

run splice -- "unix:$T/s.sock"
n=$(moved "$T/splice.trace" splice)
[ "$n" -gt 0 ] || fail "default path: no splice moved bytes"
for sc in read write readv writev; do
    n=$(moved "$T/splice.trace" "$sc")
    # ld.so and locale reads at startup are small and few; payload bytes are MiBs.
    big=$(grep -E "^[0-9]+ +$sc\(" "$T/splice.trace" | grep -cE '= [0-9]{5,}$' || true)
    assert_eq 0 "$big" "default path: $sc calls moving >= 10000 bytes"
done

for variant in no-splice env nc; do
    case $variant in
    no-splice) run no-splice -- --no-splice "unix:$T/s.sock" ;;
    env) run env FERRY_NO_SPLICE=1 -- "unix:$T/s.sock" ;;
    nc) run nc FERRY_NO_SPLICE=1 -- --compat=nc -N -U "$T/s.sock" ;;
    esac
    assert_eq 0 "$(moved "$T/$variant.trace" splice)" "$variant: splice calls"
    n=$(moved "$T/$variant.trace" readv)
    [ "$n" -gt 0 ] || fail "$variant: no readv moved bytes"
    n=$(moved "$T/$variant.trace" writev)
    [ "$n" -gt 0 ] || fail "$variant: no writev moved bytes"
done
