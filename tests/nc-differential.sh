#!/usr/bin/env bash
# ferry's nc against netcat-openbsd 1.219 itself: each scenario runs through
# both (each as a command named nc), and their stdout, stderr and exit codes
# are compared; the differences ferry makes on purpose are asserted as such.
. "$(dirname "$0")/lib.sh"
need nc.openbsd python3
nc.openbsd -h 2>&1 | grep -q 'OpenBSD netcat' || skip "nc.openbsd is not netcat-openbsd"
PEER="$(dirname "$0")/nc-peer.py"
mkdir -p "$T/netcat" "$T/ferry"
ln -s "$(command -v nc.openbsd)" "$T/netcat/nc"
ln -s "$FERRY" "$T/ferry/nc"

# run IMPL STDIN ARGS...: $T/IMPL.out, .err, .rc and .secs (elapsed).
run () {
    local impl=$1 in=$2 start rc=0; shift 2
    start=$EPOCHREALTIME
    PATH="$T/$impl:$PATH" within 20 nc "$@" < "$in" > "$T/$impl.out" 2> "$T/$impl.err" || rc=$?
    echo "$rc" > "$T/$impl.rc"
    awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }' > "$T/$impl.secs"
}

# same WHAT STDIN ARGS...: both give the same bytes, messages and exit code.
same () {
    local what=$1 in=$2; shift 2
    for impl in netcat ferry; do run "$impl" "$in" "$@"; done
    for f in rc out err; do
        cmp -s "$T/netcat.$f" "$T/ferry.$f" ||
            fail "$what: $f differs: netcat '$(cat "$T/netcat.$f")', ferry '$(cat "$T/ferry.$f")'"
    done
}

# secs_at_least WHAT SECS: both took that long.
secs_at_least () {
    for impl in netcat ferry; do
        awk -v s="$(cat "$T/$impl.secs")" -v min="$2" 'BEGIN { exit !(s >= min) }' ||
            fail "$1: $impl ended after $(cat "$T/$impl.secs") s, before $2 s"
    done
}

# The command line: netcat's messages and exit codes.
for args in "-q" "-k localhost 1" "-q soon -U /x" "-w -1 -U /x" "-U" "-U /x 1" "-l" \
            "-z -l 1" "localhost" "-I 0 localhost 1" "-O 1073741825 localhost 1" \
            "-T bogus localhost 1" "127.0.0.1 99999" "127.0.0.1 nosuchsvc" \
            "-z 127.0.0.1 0-1" "-n localhost 1" "-zn localhost 1" "-l -p 1 127.0.0.1 1" \
            "-M 256 localhost 1" "-m x localhost 1" "-i x localhost 1"; do
    # shellcheck disable=SC2086
    same "nc $args" /dev/null $args
done

# -h: help on stderr, exit 0; ferry's names itself.
for impl in netcat ferry; do run "$impl" /dev/null -h; done
for impl in netcat ferry; do
    assert_eq 0 "$(cat "$T/$impl.rc")" "$impl -h: exit code"
    assert_eq "" "$(cat "$T/$impl.out")" "$impl -h: stdout"
    grep -q '^usage: nc \[-46CDdFhklNnrStUuvZz\]' "$T/$impl.err" || fail "$impl -h: no usage"
done
grep -q '^ferry .* as nc' "$T/ferry.err" || fail "ferry's -h does not name ferry"

# Options netcat has and ferry's nc does not: refused, exit 2 (on purpose).
for opt in -S -t -V1 -W1 -Z; do
    run ferry /dev/null "$opt" 127.0.0.1 1
    assert_eq 2 "$(cat "$T/ferry.rc")" "nc $opt: exit code"
    assert_eq "nc: ${opt:0:2} is not supported by ferry's nc" "$(cat "$T/ferry.err")" "nc $opt"
done

# -z: an open port, a closed one, a range and a list, with and without -v.
open=$(free_port)
bg python3 "$PEER" "127.0.0.1:$open" echo
wait_for_port "$open"
closed=$(free_port)
same "-z open" /dev/null -z 127.0.0.1 "$open"
same "-z closed" /dev/null -z 127.0.0.1 "$closed"
assert_eq "1" "$(cat "$T/ferry.rc")" "-z closed: exit code"
assert_eq "" "$(cat "$T/ferry.err")" "-z closed: silent"
same "-zv open" /dev/null -zv 127.0.0.1 "$open"
assert_eq "Connection to 127.0.0.1 $open port [tcp/*] succeeded!" "$(cat "$T/ferry.err")" "-zv open"
same "-zv closed" /dev/null -zv 127.0.0.1 "$closed"
same "-zv localhost" /dev/null -zv localhost "$open"
same "-zvn" /dev/null -zvn 127.0.0.1 "$open"
same "-zv range" /dev/null -zv 127.0.0.1 "$((open - 1))-$((open + 1))"
same "-zv list" /dev/null -zv 127.0.0.1 "$closed" "$open" ssh
same "-z list, all closed" /dev/null -z 127.0.0.1 "$closed" "$closed"
# -r: the same lines, in an order of their own.
for impl in netcat ferry; do
    run "$impl" /dev/null -zv -r 127.0.0.1 "$((open - 2))-$((open + 2))"
    sort "$T/$impl.err" > "$T/$impl.sorted"
done
cmp -s "$T/netcat.sorted" "$T/ferry.sorted" ||
    fail "-zv -r: netcat $(cat "$T/netcat.sorted"), ferry $(cat "$T/ferry.sorted")"
assert_eq "0 5" "$(cat "$T/ferry.rc") $(wc -l < "$T/ferry.sorted")" "-zv -r"

# Relays: -N, -n, -q0 as libvirt runs it, the reply after stdin EOF.
printf 'ping\n' > "$T/ping"
same "-N TCP echo" "$T/ping" -N 127.0.0.1 "$open"
assert_eq ping "$(cat "$T/ferry.out")" "-N TCP echo: reply"
same "-n echo" "$T/ping" -n -N 127.0.0.1 "$open"
bg python3 "$PEER" "$T/echo.sock" echo
wait_for_socket "$T/echo.sock"
for i in 1 2 3 4 5; do
    same "-q0 -U echo, run $i" "$T/ping" -q0 -U "$T/echo.sock"
    assert_eq ping "$(cat "$T/ferry.out")" "-q0 -U echo, run $i: reply"
done
same "-q0 TCP echo" "$T/ping" -q0 127.0.0.1 "$open"
# -i1: a second's wait after each line sent.
same "-i1 echo" "$T/ping" -i1 -N 127.0.0.1 "$open"
assert_eq ping "$(cat "$T/ferry.out")" "-i1 echo: reply"
secs_at_least "-i1 echo" 1

# -q: the reply comes after 0.3 s and the server closes 0.5 s later; -q never
# cuts it, and adds SECS after the end.  Stdin a pipe, then /dev/null.
bg python3 "$PEER" "$T/late.sock" late 0.3 0.5
wait_for_socket "$T/late.sock"
same "-q0 late reply" "$T/ping" -q0 -U "$T/late.sock"
assert_eq late "$(cat "$T/ferry.out")" "-q0 late reply"
secs_at_least "-q0 late reply" 0.8
same "-q1, server open 1 s after its reply" /dev/null -q1 -U "$T/late.sock"
assert_eq late "$(cat "$T/ferry.out")" "-q1 late reply"
secs_at_least "-q1 late reply" 1.8

# SIGTERM in -q5's wait ends it at once: netcat is killed (143); ferry,
# with nothing undelivered, exits 0 (on purpose).
bg python3 "$PEER" "$T/logged.sock" echo "$T/closed"
wait_for_socket "$T/logged.sock"
for impl in netcat ferry; do
    : > "$T/closed"
    PATH="$T/$impl:$PATH" nc -q5 -U "$T/logged.sock" < /dev/null > /dev/null &
    track $!
    waiter=$LAST_PID
    # In the wait: the server closed, and nc's socket is gone.
    for _ in $(seq 200); do
        [ -s "$T/closed" ] && ! ls -l "/proc/$waiter/fd" 2>/dev/null | grep -q 'socket:' && break
        sleep 0.05
    done
    kill -TERM "$waiter"
    rc=0; wait_exit 2 "$waiter" || rc=$?
    echo "$rc" > "$T/$impl.rc"
done
assert_eq "143 0" "$(cat "$T/netcat.rc") $(cat "$T/ferry.rc")" "SIGTERM in -q5's wait"

# -w1: a second without a byte either way ends the relay: exit 0, no
# word; with stdin at EOF, and with stdin open.
bg python3 "$PEER" "$T/idle.sock" late 0.2 30
wait_for_socket "$T/idle.sock"
same "-w1 idle" /dev/null -w1 -U "$T/idle.sock"
assert_eq "0 late" "$(cat "$T/ferry.rc") $(cat "$T/ferry.out")" "-w1 idle"
secs_at_least "-w1 idle" 1.1
exec {open_stdin}< <(exec sleep 60)
track $!
same "-w1 idle, stdin open" "/dev/fd/$open_stdin" -w1 -U "$T/idle.sock"
assert_eq "0 late" "$(cat "$T/ferry.rc") $(cat "$T/ferry.out")" "-w1 idle, stdin open"
secs_at_least "-w1 idle, stdin open" 1.1
for impl in netcat ferry; do
    awk -v s="$(cat "$T/$impl.secs")" 'BEGIN { exit !(s < 5) }' ||
        fail "$impl -w1 waited for stdin's EOF"
done

# -C: "\n" goes as "\r\n", an "\r\n" stays.
cport=$(free_port)
printf 'a\nb\r\nc\n\nd' > "$T/lines"
for impl in netcat ferry; do
    rm -f "$T/got-$impl"
    bg python3 "$PEER" "127.0.0.1:$cport" capture "$T/got-$impl"
    server=$LAST_PID
    wait_for_port "$cport"
    run "$impl" "$T/lines" -C -N 127.0.0.1 "$cport"
    for _ in $(seq 100); do [ -e "$T/got-$impl" ] && break; sleep 0.05; done
    kill "$server"; wait "$server" 2>/dev/null || true
done
cmp -s "$T/got-netcat" "$T/got-ferry" ||
    fail "-C: netcat sent $(od -c "$T/got-netcat"), ferry $(od -c "$T/got-ferry")"
assert_eq "$(printf 'a\r\nb\r\nc\r\n\r\nd' | od -c)" "$(od -c < "$T/got-ferry")" "-C bytes"

# -F: the connected socket passed over stdout (ssh's ProxyUseFdpass); the
# receiver talks over it to the echo server.  Stdout no socket: an error.
for impl in netcat ferry; do
    PATH="$T/$impl:$PATH" within 10 python3 -c '
import array, socket, subprocess, sys
a, b = socket.socketpair()
nc = subprocess.Popen(["nc", "-F", "127.0.0.1", sys.argv[1]], stdout=b.fileno())
b.close()
byte, anc, _, _ = a.recvmsg(1, socket.CMSG_SPACE(4))
fds = array.array("i")
fds.frombytes(anc[0][2][:4])
s = socket.socket(fileno=fds[0])
s.setblocking(True)
s.sendall(b"ping\n")
s.shutdown(socket.SHUT_WR)
print(repr(byte), s.recv(100), nc.wait())' "$open" > "$T/$impl.out" || fail "$impl -F: exited $?"
done
assert_eq "b'\\x00' b'ping\\n' 0" "$(cat "$T/ferry.out")" "-F: a byte, the echo, nc's exit code"
cmp -s "$T/netcat.out" "$T/ferry.out" ||
    fail "-F: netcat $(cat "$T/netcat.out"), ferry $(cat "$T/ferry.out")"
same "-F to a file" /dev/null -F 127.0.0.1 "$open"
same "-F -U" /dev/null -F -U "$T/echo.sock"

# -p SOURCE_PORT and -s SOURCE_ADDR: the server sees them.
pport=$(free_port)
bg python3 "$PEER" "127.0.0.1:$pport" peer
wait_for_port "$pport"
for impl in netcat ferry; do
    sport=$(free_port)
    run "$impl" /dev/null -s 127.0.0.1 -p "$sport" 127.0.0.1 "$pport"
    assert_eq "0 127.0.0.1 $sport" "$(cat "$T/$impl.rc") $(cat "$T/$impl.out")" "$impl -s -p"
done
# A source address that is not ours: both exit 1; ferry names the connect.
for impl in netcat ferry; do run "$impl" /dev/null -s 192.0.2.1 127.0.0.1 "$pport"; done
assert_eq "1 1" "$(cat "$T/netcat.rc") $(cat "$T/ferry.rc")" "-s 192.0.2.1: exit codes"
assert_eq "nc: bind failed: Cannot assign requested address" "$(cat "$T/netcat.err")" \
    "netcat -s 192.0.2.1"
assert_eq "nc: cannot connect to 'tcp:127.0.0.1:$pport': Cannot assign requested address" \
    "$(cat "$T/ferry.err")" "ferry -s 192.0.2.1"

# -l -p PORT, -l PORT, -l -s ADDR -p PORT: stdin goes to the client, the
# client's bytes to stdout, and its EOF ends the listener.
make_data up 100000
make_data down 100000
for form in "-l -p" "-l" "-l -s 127.0.0.1 -p"; do
    for impl in netcat ferry; do
        lport=$(free_port)
        # shellcheck disable=SC2086
        PATH="$T/$impl:$PATH" nc $form "$lport" < "$T/up" > "$T/l-$impl.out" 2> "$T/l-$impl.err" &
        track $!
        listener=$LAST_PID
        wait_for_port "$lport"
        within 10 python3 -c '
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.sendall(open(sys.argv[2], "rb").read()); c.shutdown(socket.SHUT_WR)
got = b""
while (b := c.recv(65536)): got += b
open(sys.argv[3], "wb").write(got)' "$lport" "$T/down" "$T/l-$impl.got"
        rc=0; wait_exit 10 "$listener" || rc=$?
        assert_eq 0 "$rc" "$impl $form: exit code"
        assert_same_file "$T/down" "$T/l-$impl.out" "$impl $form: the client's bytes"
        assert_same_file "$T/up" "$T/l-$impl.got" "$impl $form: stdin to the client"
        assert_eq "" "$(cat "$T/l-$impl.err")" "$impl $form: stderr"
    done
done

# -l -k: one client after the other, each one's bytes on stdout.  (At the
# SIGTERM that ends it, netcat exits 143; ferry exits 0 if nothing was lost.)
for impl in netcat ferry; do
    kport=$(free_port)
    PATH="$T/$impl:$PATH" nc -l -k -p "$kport" < /dev/null > "$T/k-$impl.out" &
    track $!
    listener=$LAST_PID
    wait_for_port "$kport"
    for word in one two; do
        echo "$word" | within 10 nc.openbsd -N 127.0.0.1 "$kport" ||
            fail "$impl -l -k: client $word"
    done
    for _ in $(seq 100); do [ "$(wc -l < "$T/k-$impl.out")" = 2 ] && break; sleep 0.05; done
    kill "$listener"; wait "$listener" 2>/dev/null || true
    assert_eq "one two" "$(echo $(cat "$T/k-$impl.out"))" "$impl -l -k"
done

# -T, -I, -O, -D, -M, -m, -b: the same socket options, as strace sees them set.
if command -v strace >/dev/null; then
    for impl in netcat ferry; do
        PATH="$T/$impl:$PATH" within 10 env "${STRACE_ENV[@]}" strace -f -qq -e trace=setsockopt -o "$T/strace-$impl" \
            nc -N -T af41 -I 65536 -O 32768 -D -M 9 -m 2 -b 127.0.0.1 "$open" \
            < "$T/ping" > /dev/null ||
            fail "$impl -T -I -O -D -M -m -b exited $?"
        grep -oE '(IP_TOS|SO_RCVBUF|SO_SNDBUF|SO_DEBUG|IP_TTL|IP_MINTTL|SO_BROADCAST), \[[0-9]+\]' \
            "$T/strace-$impl" | sort > "$T/opts-$impl"
    done
    cmp -s "$T/opts-netcat" "$T/opts-ferry" ||
        fail "-T -I -O -D -M -m -b: netcat set $(cat "$T/opts-netcat"), ferry $(cat "$T/opts-ferry")"
    assert_eq 7 "$(wc -l < "$T/opts-ferry")" "-T -I -O -D -M -m -b: options set"
fi
