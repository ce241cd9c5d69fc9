#!/usr/bin/env bash
# ferry --nbd between two UNIX sockets moves the payloads with splice(2):
# under strace, no read/write/readv/writev carries them, and the peeks that
# show the parser its headers (recvfrom) take at most 4 KiB each.  With
# --no-splice, and always with --nbd-readonly, the ring copies and nothing
# is spliced.  Each copy equals the export.
. "$(dirname "$0")/lib.sh"
need nbdkit nbdcopy strace sha256sum
unset FERRY_NO_SPLICE   # this test chooses the path itself

size=$((64 * 1024 * 1024))
bg nbdkit -f -U "$T/src.sock" pattern size=$size
wait_for_socket "$T/src.sock"
nbdcopy "nbd+unix:///?socket=$T/src.sock" "$T/want.img"

# run NAME FERRY-OPTIONS...: nbdcopy through a ferry listener under strace
run () {
    local name=$1; shift
    bg env "${STRACE_ENV[@]}" strace -f -qq -o "$T/$name.trace" -e trace=splice,read,write,readv,writev,recvfrom \
        "$FERRY" -l -k "$@" "unix:$T/$name.sock" "unix:$T/src.sock"
    local tracer=$LAST_PID
    wait_for_socket "$T/$name.sock"
    within 60 nbdcopy "nbd+unix:///?socket=$T/$name.sock" "$T/$name.img" ||
        fail "$name: nbdcopy through ferry failed"
    kill "$(pgrep -P "$tracer")"
    wait "$tracer" || true
    assert_same_file "$T/want.img" "$T/$name.img" "$name: the copy"
}

# Calls of SYSCALL in TRACE that returned N or more bytes.
at_least () {  # TRACE SYSCALL N
    grep -E "^[0-9]+ +$2\(" "$1" | awk -v n="$3" '$NF ~ /^[0-9]+$/ && $NF + 0 >= n' | wc -l
}

run nbd --nbd
[ "$(at_least "$T/nbd.trace" splice 65536)" -gt 0 ] || fail "--nbd: no large splice"
for sc in read write readv writev; do
    # ld.so and locale reads at startup are small and few; payloads are MiBs.
    assert_eq 0 "$(at_least "$T/nbd.trace" "$sc" 10000)" "--nbd: $sc calls moving >= 10000 bytes"
done
assert_eq 0 "$(at_least "$T/nbd.trace" recvfrom 4097)" "--nbd: peeks over 4 KiB"
[ "$(at_least "$T/nbd.trace" recvfrom 1)" -gt 0 ] || fail "--nbd: no peeks"

for variant in no-splice readonly; do
    case $variant in
    no-splice) run no-splice --nbd --no-splice ;;
    readonly) run readonly --nbd-readonly ;;
    esac
    assert_eq 0 "$(at_least "$T/$variant.trace" splice 1)" "$variant: splice calls"
    [ "$(at_least "$T/$variant.trace" readv 10000)" -gt 0 ] || fail "$variant: no large readv"
done
