#!/usr/bin/env bash
# nc -u against the real nc.openbsd: the same scenarios through both, with a
# python3 peer (tests/udp-peer.py) that logs every datagram's size and
# content.  A client's datagrams follow stdin's reads (lines, and 16 KiB
# reads of a file), replies come back whole, -l -u answers the first
# datagram's sender, over IPv4 and IPv6; -q, -w and an empty datagram end
# both alike, with the same exit codes.  The deliberate differences are
# asserted as such: a datagram larger than 16 KiB reaches stdout whole
# (netcat cuts it), -q still writes the replies that come after stdin's
# EOF (netcat stops reading there), -v sends no probe datagrams (netcat
# sends five "X"), a refused datagram is one line and exit 1 (netcat: 0,
# silent), -z -u and -U -u are refused, and SIGTERM (and INT, HUP, QUIT)
# exits 0, also while -l -u waits for its first datagram (netcat dies of
# it).
. "$(dirname "$0")/lib.sh"
need nc.openbsd python3 ss
ferry_link nc
PEER="$(dirname "$0")/udp-peer.py"
# The nc link in the relays, --compat=nc in the refusals: the same code.
NCS=(nc.openbsd "$T/bin/nc")

lines () { [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }  # FILE N
has () { grep -qF -- "$2" "$1" 2>/dev/null; }                # FILE TEXT
udp_bound () { ss -Hlun "sport = :$1" | grep -q .; }          # PORT
now_ms () { date +%s%3N; }
free_udp_port () {
    python3 -c 'import socket; s=socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

server=0
start_server () {  # HOST: a udp-peer.py server, its port in $port, its log in $log
    server=$((server + 1))
    bg python3 "$PEER" server "$1" "$T/server$server.port" "$T/server$server.log"
    wait_until 10 test -s "$T/server$server.port"
    port=$(cat "$T/server$server.port")
    log="$T/server$server.log"
}

# The first run's results (nc.openbsd's), which every other run must equal.
same_as_netcat () {  # WHAT VALUE
    local key=${1//[^a-zA-Z0-9]/_}
    if [ "$nc" = nc.openbsd ]; then
        printf '%s' "$2" > "$T/want.$key"
    else
        assert_eq "$(cat "$T/want.$key")" "$2" "$1 of $nc (as nc.openbsd's)"
    fi
}

v6=
python3 -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).bind(("::1", 0))' \
    2>/dev/null && v6=::1

# Client: one datagram per line read (each sent before the next is
# written), the replies to "ping" whole on stdout; -q0 ends at EOF.
for host in 127.0.0.1 $v6; do
    family=-4; [ "$host" = ::1 ] && family=-6
    for nc in "${NCS[@]}"; do
        start_server "$host"
        out="$T/client$server.out"
        : > "$out"
        rc=0
        { printf 'ping one\n'; wait_until 10 has "$out" 'pong:ping one'
          printf 'two\n'; wait_until 10 lines "$log" 2
          printf 'ping three\n'; wait_until 10 has "$out" 'pong:ping three'; } |
            within 20 $nc $family -u -q0 "$host" "$port" >> "$out" || rc=$?
        assert_eq 0 "$rc" "exit code of $nc -u -q0 $host"
        assert_eq "pong:ping one
pong:ping three" "$(cat "$out")" "replies through $nc -u $host"
        same_as_netcat "datagrams sent to $host" "$(cat "$log")"
    done
done

# Client: a file, read 16 KiB at a time, each read a datagram; -q0.
make_data file 100000
for nc in "${NCS[@]}"; do
    start_server 127.0.0.1
    rc=0
    within 20 $nc -u -q0 127.0.0.1 "$port" < "$T/file" || rc=$?
    assert_eq 0 "$rc" "exit code of $nc -u -q0 < file"
    wait_until 10 lines "$log" 7
    assert_eq "16384 16384 16384 16384 16384 16384 1696" "$(cut -d' ' -f1 "$log" | xargs)" \
        "datagram sizes of a file through $nc -u"
    same_as_netcat "datagrams of a file" "$(cat "$log")"
done

# -q1 and -w1 after an immediate EOF, to a server that never answers: both
# end about a second later, exit 0, silently.
for opt in -q1 -w1; do
    for nc in "${NCS[@]}"; do
        start_server 127.0.0.1
        start=$(now_ms)
        rc=0
        within 20 $nc -u "$opt" 127.0.0.1 "$port" < /dev/null 2> "$T/err" || rc=$?
        took=$(( $(now_ms) - start ))
        assert_eq 0 "$rc" "exit code of $nc -u $opt"
        assert_eq "" "$(cat "$T/err")" "stderr of $nc -u $opt"
        [ "$took" -ge 900 ] && [ "$took" -lt 5000 ] || fail "$nc -u $opt took $took ms (about 1000)"
    done
done

# -q1 with the reply after stdin's EOF (stdin a file: read, then EOF, then
# the reply): netcat stops reading at the EOF and prints nothing; ferry
# writes out what comes before the deadline.
printf 'ping file\n' > "$T/ping"
for nc in "${NCS[@]}"; do
    start_server 127.0.0.1
    rc=0
    within 20 $nc -u -q1 127.0.0.1 "$port" < "$T/ping" > "$T/out" || rc=$?
    assert_eq 0 "$rc" "exit code of $nc -u -q1 < file"
    [ "$nc" = nc.openbsd ] && want= || want="pong:ping file"
    assert_eq "$want" "$(cat "$T/out")" "the reply after EOF through $nc -u -q1"
done

# -v: netcat first sends five "X" datagrams over 3 s (its udptest) and says
# "Connection to ... succeeded!"; ferry sends only stdin, and -v's counts.
for nc in "${NCS[@]}"; do
    start_server 127.0.0.1
    rc=0
    printf 'hi\n' | within 20 $nc -v -u -q0 127.0.0.1 "$port" 2> "$T/err" || rc=$?
    assert_eq 0 "$rc" "exit code of $nc -v -u"
    wait_until 10 has "$log" 'hi'
    if [ "$nc" = nc.openbsd ]; then
        assert_eq "X X X X X hi\n" "$(cut -d' ' -f3 "$log" | paste -sd" ")" "nc.openbsd -v's probes"
        assert_eq "Connection to 127.0.0.1 $port port [udp/*] succeeded!" "$(cat "$T/err")" \
            "nc.openbsd -v -u"
    else
        assert_eq "hi\n" "$(cut -d' ' -f3 "$log" | paste -sd" ")" "what $nc -v -u sent"
        assert_eq "nc: udp '127.0.0.1:$port': sent 1 datagrams (3 bytes), received 0 (0 bytes)" \
            "$(cat "$T/err")" "$nc -v -u"
    fi
done

# -l -u: the first datagram's sender is the peer; stdin goes to it; an
# empty datagram (netcat's EOF) ends the relay.  A datagram of 20000 bytes:
# netcat writes its first 16384, ferry all of it.
for host in 127.0.0.1 $v6; do
    family=-4; [ "$host" = ::1 ] && family=-6
    for nc in "${NCS[@]}"; do
        server=$((server + 1))
        port=$(free_udp_port)
        out="$T/listen$server.out"
        mkfifo "$T/in$server"
        $nc $family -u -l "$port" < "$T/in$server" > "$out" & track $!
        listener=$LAST_PID
        exec 3> "$T/in$server"
        wait_until 10 udp_bound "$port"
        bg python3 "$PEER" client "$host" "$port" "$T/peer$server.log" \
            'send:hello\n' recv size:20000 empty
        wait_until 10 has "$out" hello
        printf 'back\n' >&3
        rc=0
        wait_exit 20 "$listener" || rc=$?
        exec 3>&-
        assert_eq 0 "$rc" "exit code of $nc -u -l after the empty datagram"
        assert_eq "5 $(printf 'back\n' | sha256sum | cut -c1-16) back\\n" \
            "$(cat "$T/peer$server.log")" "what $nc -u -l $host sent its peer"
        python3 -c 'import sys; sys.stdout.buffer.write(b"hello\n" + bytes(i % 251 for i in range(20000)))' \
            > "$T/want.listen"
        if [ "$nc" = nc.openbsd ]; then
            cmp -s "$out" <(head -c $((6 + 16384)) "$T/want.listen") ||
                fail "nc.openbsd -u -l no longer cuts a datagram at 16 KiB: see ferry(1)"
        else
            assert_same_file "$T/want.listen" "$out" "datagrams whole through $nc -u -l $host"
        fi
    done
done

# -l -k -u: datagrams from several senders, until a signal; an empty one
# does not end it.
for nc in "${NCS[@]}"; do
    server=$((server + 1))
    port=$(free_udp_port)
    out="$T/keep$server.out"
    $DFL $nc -u -l -k "$port" < /dev/null > "$out" & track $!
    listener=$LAST_PID
    wait_until 10 udp_bound "$port"
    python3 "$PEER" client 127.0.0.1 "$port" "$T/k1.log" 'send:first\n'
    wait_until 10 has "$out" first
    # An empty datagram ends neither (netcat binds its socket again: a
    # datagram may be lost meanwhile, so only ferry gets one at once).
    [ "$nc" = nc.openbsd ] || python3 "$PEER" client 127.0.0.1 "$port" "$T/k2.log" empty
    python3 "$PEER" client 127.0.0.1 "$port" "$T/k2.log" 'send:second\n'
    wait_until 10 has "$out" second
    kill -TERM "$listener"
    rc=0
    wait_exit 10 "$listener" || rc=$?
    assert_eq "first
second" "$(cat "$out")" "datagrams from two senders through $nc -u -l -k"
    # netcat dies of the signal; ferry's nc, with nothing undelivered, exits 0.
    [ "$nc" = nc.openbsd ] && want=143 || want=0
    assert_eq "$want" "$rc" "exit code of $nc -u -l -k after SIGTERM"
done

# -l -u stopped while waiting for its first datagram: netcat dies of the
# signal, ferry's nc exits 0 (nothing was read), as its TCP listener does.
# ferry's other stop signals end it the same way; SIGUSR1 does not.
stop_waiting_listener () {  # NC SIGNAL [SIGNAL-FIRST]
    local nc=$1 sig=$2 first=${3:-} port rc=0
    port=$(free_udp_port)
    $DFL $nc -u -l "$port" < /dev/null & track $!
    listener=$LAST_PID
    wait_until 10 udp_bound "$port"
    if [ -n "$first" ]; then
        kill -"$first" "$listener"
        sleep 0.2
        kill -0 "$listener" || fail "$nc -u -l ended at SIG$first"
    fi
    kill -"$sig" "$listener"
    wait_exit 10 "$listener" || rc=$?
    return $rc
}
for nc in "${NCS[@]}"; do
    rc=0
    stop_waiting_listener "$nc" TERM || rc=$?
    [ "$nc" = nc.openbsd ] && want=143 || want=0
    assert_eq "$want" "$rc" "exit code of $nc -u -l after SIGTERM, waiting"
done
for sig in INT HUP QUIT; do
    rc=0
    stop_waiting_listener "$T/bin/nc" "$sig" USR1 || rc=$?
    assert_eq 0 "$rc" "exit code of ferry's nc -u -l after SIGUSR1 and SIG$sig, waiting"
done

# A datagram refused (nothing listens: ICMP port unreachable): netcat ends
# silently with 0; ferry's nc ends too, with one line and exit 1.
port=$(free_udp_port)
for nc in "${NCS[@]}"; do
    rc=0
    printf 'lost\n' | within 10 $nc -u 127.0.0.1 "$port" 2> "$T/err" || rc=$?
    if [ "$nc" = nc.openbsd ]; then
        assert_eq "0:" "$rc:$(cat "$T/err")" "nc.openbsd's refused datagram"
    else
        assert_eq "1:nc: cannot send to udp '127.0.0.1:$port': Connection refused" \
            "$rc:$(cat "$T/err")" "$nc's refused datagram"
    fi
done

# Refused combinations.
for nc in "$FERRY --compat=nc" "$T/bin/nc"; do
    rc=0; $nc -z -u 127.0.0.1 "$port" 2> "$T/err" || rc=$?
    assert_eq "2:nc: -z -u is not supported by ferry's nc" "$rc:$(cat "$T/err")" "$nc -z -u"
    # The port is parsed as for TCP, with netcat's message.
    rc=0; $nc -u 127.0.0.1 65536 2> "$T/err" || rc=$?
    assert_eq "1:nc: port number too large: 65536" "$rc:$(cat "$T/err")" "$nc -u with a bad port"
    rc=0; $nc -U -u "$T/none.sock" 2> "$T/err" || rc=$?
    assert_eq "2:nc: -U -u is not supported by ferry's nc" "$rc:$(cat "$T/err")" "$nc -U -u"
    # The UDP relay reads stdin itself, and -F would pass a TCP socket.
    for flag in -C "-i 1" -F; do
        rc=0; $nc -u $flag 127.0.0.1 "$port" </dev/null >/dev/null 2> "$T/err" || rc=$?
        assert_eq "2:nc: -u with ${flag%% *} is not supported by ferry's nc" \
            "$rc:$(cat "$T/err")" "$nc -u $flag"
    done
done
