#!/usr/bin/env bash
# ferry as nc (a link named nc, and --compat=nc): netcat-openbsd's messages
# for the options libvirt probes, relays over -U and HOST PORT, -q bounding
# the wait after stdin EOF without dropping bytes already read, -d, -z, -l.
. "$(dirname "$0")/lib.sh"
need socat
ferry_link nc
NC="$T/bin/nc"
usage="usage: nc [-46dhklNUuvz] [-q seconds] [-w timeout] [destination] [port]
       nc -U [-dhklNvz] [-q seconds] [-w timeout] path"

check () {  # EXPECTED-RC EXPECTED-STDERR ARGS...
    local want_rc=$1 want=$2 rc; shift 2
    for nc in "$NC" "$FERRY --compat=nc"; do
        rc=0
        within 10 $nc "$@" </dev/null >/dev/null 2>"$T/err" || rc=$?
        assert_eq "$want_rc" "$rc" "exit code of $nc $*"
        assert_eq "$want" "$(cat "$T/err")" "stderr of $nc $*"
    done
}

check 1 "nc: option requires an argument -- 'q'
$usage" -q
check 1 "nc: invalid option -- 'x'
$usage" -x
check 1 "nc: must use -l with -k" -k localhost 1
check 1 "nc: quit timer invalid: soon" -q soon -U /x
check 1 "nc: timeout too small: -1" -w -1 -U /x
check 1 "$usage" -U
check 1 "nc: cannot use port with -U" -U /x 1
check 1 "nc: cannot connect to '$T/none.sock': No such file or directory" -U "$T/none.sock"

# libvirt's probe, verbatim: it must choose -q0.
probe='if "$0" -q 2>&1 | grep "requires an argument" >/dev/null 2>&1; then echo -q0; else echo none; fi'
assert_eq -q0 "$(sh -c "$probe" "$NC")" "libvirt's nc probe"

# -U and HOST PORT: every byte both ways, the reply after stdin EOF included.
make_data up $((2 * 1024 * 1024))
make_data down $((2 * 1024 * 1024))
bg socat -t 30 UNIX-LISTEN:"$T/s.sock" SYSTEM:"cat > '$T/got'; cat '$T/down'"
wait_for_socket "$T/s.sock"
within 20 "$NC" -U "$T/s.sock" < "$T/up" > "$T/out" || fail "nc -U exited $?"
wait "$LAST_PID"
assert_same_file "$T/up" "$T/got" "upload over -U"
assert_same_file "$T/down" "$T/out" "reply over -U"

port=$(free_port)
bg socat -t 30 TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr SYSTEM:"cat > '$T/got'; cat '$T/down'"
wait_for_port "$port"
within 20 "$FERRY" --compat=nc -4 -N 127.0.0.1 "$port" < "$T/up" > "$T/out" || fail "nc HOST PORT exited $?"
wait "$LAST_PID"
assert_same_file "$T/up" "$T/got" "upload over TCP"
assert_same_file "$T/down" "$T/out" "reply over TCP"

# -q1: the server does not close for 5 s; nc ends one second after stdin EOF, with
# the whole reply that came before.
bg socat UNIX-LISTEN:"$T/q.sock" SYSTEM:"cat '$T/down'; exec sleep 5 >/dev/null 2>&1"
wait_for_socket "$T/q.sock"
start=$(date +%s)
within 15 "$NC" -q1 -U "$T/q.sock" < /dev/null > "$T/out" || fail "nc -q1 exited $?"
[ $(( $(date +%s) - start )) -lt 4 ] || fail "nc -q1 did not stop waiting (the server closes after 5 s)"
assert_same_file "$T/down" "$T/out" "reply before -q1 expired"

# -q0 while stdout is stalled: the reply bytes already read into ferry's
# 1 MiB buffer are still delivered after stdin EOF, not dropped.
make_data big $((8 * 1024 * 1024))
bg socat UNIX-LISTEN:"$T/z.sock" SYSTEM:"cat '$T/big'; exec sleep 5 >/dev/null 2>&1"
wait_for_socket "$T/z.sock"
{ sleep 1; } | within 15 "$NC" -q0 -U "$T/z.sock" | { sleep 2; cat > "$T/out"; }
[ "${PIPESTATUS[1]}" = 0 ] || fail "nc -q0 exited ${PIPESTATUS[1]}"
got=$(stat -c %s "$T/out")
[ "$got" -ge $((1024 * 1024)) ] || fail "nc -q0 delivered only $got bytes (the buffer held 1 MiB)"
cmp -s "$T/out" <(head -c "$got" "$T/big") || fail "nc -q0 output is not a prefix of the reply"

# -d: stdin is not read and not half-closed; the reply still arrives.
bg socat UNIX-LISTEN:"$T/d.sock" SYSTEM:"echo hello"
wait_for_socket "$T/d.sock"
assert_eq hello "$(within 10 "$NC" -d -U "$T/d.sock" < /dev/zero)" "-d"

# -z: connect and close.
bg socat UNIX-LISTEN:"$T/zz.sock" SYSTEM:"true"
wait_for_socket "$T/zz.sock"
within 10 "$NC" -z -U "$T/zz.sock" || fail "nc -z on a listening socket"
port=$(free_port)
bg socat TCP-LISTEN:"$port",bind=127.0.0.1,reuseaddr SYSTEM:"true"
wait_for_port "$port"
assert_eq "Connection to 127.0.0.1 $port port [tcp/*] succeeded!" \
    "$(within 10 "$NC" -zv 127.0.0.1 "$port" 2>&1)" "nc -zv"
check 1 "nc: cannot connect to '$T/none.sock': No such file or directory" -z -U "$T/none.sock"

# -l -U: listen, relay one connection with stdio.
bg sh -c "'$NC' -l -U '$T/l.sock' < '$T/up' > '$T/lout'"
listener=$LAST_PID
wait_for_socket "$T/l.sock"
within 10 socat -t 10 UNIX-CONNECT:"$T/l.sock" SYSTEM:"cat > '$T/lgot'" < /dev/null
wait "$listener" || fail "nc -l exited $?"
assert_same_file "$T/up" "$T/lgot" "nc -l -U served stdin"
