#!/usr/bin/env bash
# --sndbuf/--rcvbuf reach the kernel on the socket ferry connects (TCP and
# UNIX) and on the one it accepts, also when forwarding: ss shows them doubled (the kernel's
# bookkeeping).  Without them, TCP keeps the kernel's sizes (and its
# autotuning), and a UNIX socket's send buffer is the relay buffer's size
# (-b), as far as net.core.wmem_max allows.  A bad value is a usage error.
. "$(dirname "$0")/lib.sh"
need socat ss

mkfifo "$T/in"
exec 7<>"$T/in"     # ferry's stdin stays open, so its connection stays up

# skmem PID [PATTERN]: the "rbN tbN" of PID's established TCP or UNIX
# socket(s), waiting up to 5 s for one (that matches PATTERN, if given: a
# UNIX socket's sizes are set just after its connect, which ss may see
# first); the last seen, or empty if none
skmem () {
    local out=
    for _ in $(seq 100); do
        out=$(ss -Hanpm -t -x state established 2>/dev/null | tr '\n' ' ' |
              grep -oE "pid=$1,fd=[0-9]+\)\)[[:space:]]+skmem:\(r[0-9]+,rb[0-9]+,t[0-9]+,tb[0-9]+" |
              sed -E 's/.*,(rb[0-9]+),t[0-9]+,(tb[0-9]+)/\1 \2/' | sort -u)
        [ -n "$out" ] && [[ -z ${2:-} || $out == *$2* ]] && break
        sleep 0.05
    done
    echo "$out"
}

port=$(free_port)
bg socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" SYSTEM:"cat > /dev/null"
wait_for_port "$port"
bg_stdin "$T/in" "$FERRY" --sndbuf 96K --rcvbuf 64K "127.0.0.1:$port"
assert_eq "rb131072 tb196608" "$(skmem "$LAST_PID")" "TCP connect with --sndbuf 96K --rcvbuf 64K"
kill "$LAST_PID"

bg_stdin "$T/in" "$FERRY" "127.0.0.1:$port"
[ "$(skmem "$LAST_PID")" != "rb131072 tb196608" ] || fail "TCP connect without options: sizes were set"
kill "$LAST_PID"

bg socat "UNIX-LISTEN:$T/s.sock,fork" SYSTEM:"cat > /dev/null"
wait_for_socket "$T/s.sock"
bg_stdin "$T/in" "$FERRY" --sndbuf 96K --rcvbuf 64K "unix:$T/s.sock"
assert_eq "rb131072 tb196608" "$(skmem "$LAST_PID" "rb131072 tb196608")" "UNIX connect with --sndbuf 96K --rcvbuf 64K"
kill "$LAST_PID"

# tb: the send buffer ss shows for SIZE, doubled, capped by wmem_max first
unix_tb () { local m; m=$(sysctl -n net.core.wmem_max); echo $((2 * ($1 < m ? $1 : m))); }
bg_stdin "$T/in" "$FERRY" "unix:$T/s.sock"
assert_eq "tb$(unix_tb 1048576)" "$(skmem "$LAST_PID" "tb$(unix_tb 1048576)" | grep -o 'tb[0-9]*')" \
    "UNIX connect without options: send buffer of -b's default 1M"
kill "$LAST_PID"
bg_stdin "$T/in" "$FERRY" -b 256K "unix:$T/s.sock"
assert_eq "tb$(unix_tb 262144)" "$(skmem "$LAST_PID" "tb$(unix_tb 262144)" | grep -o 'tb[0-9]*')" \
    "UNIX connect with -b 256K: send buffer of 256K"
kill "$LAST_PID"

lport=$(free_port)
bg_stdin "$T/in" "$FERRY" -l --sndbuf 96K --rcvbuf 64K "127.0.0.1:$lport"
listener=$LAST_PID
wait_for_port "$lport"
bg socat "TCP:127.0.0.1:$lport" SYSTEM:"cat > /dev/null"
assert_eq "rb131072 tb196608" "$(skmem "$listener" "rb131072 tb196608")" "accepted TCP with --sndbuf 96K --rcvbuf 64K"

# listen-and-forward: the accepted socket and the one to the target
fport=$(free_port)
bg "$FERRY" -l -k --sndbuf 96K --rcvbuf 64K "127.0.0.1:$fport" "127.0.0.1:$port"
forwarder=$LAST_PID
wait_for_port "$fport"
bg socat "TCP:127.0.0.1:$fport" SYSTEM:"cat > /dev/null"
for _ in $(seq 100); do
    [ "$(ss -Htnp state established | grep -c "pid=$forwarder,")" = 2 ] && break
    sleep 0.05
done
assert_eq "rb131072 tb196608" "$(skmem "$forwarder" "rb131072 tb196608")" "forwarded TCP, both sockets"

set +e
"$FERRY" --sndbuf 0 "127.0.0.1:$port" < /dev/null > /dev/null 2> "$T/err"
rc=$?
set -e
assert_eq 2 "$rc" "exit code for --sndbuf 0"
assert_contains "$T/err" "ferry: invalid --sndbuf '0': expected 1 to 1G bytes" "message for --sndbuf 0"
