#!/usr/bin/env bash
# The first connections of a forwarder arrive together, so several worker
# threads set up their buffers at once (and read the cached pipe-max-size
# at once: a data race that ThreadSanitizer reported).  Each of 6 clients'
# bytes arrive whole; ferry exits 0 on SIGTERM, with no sanitizer report
# (in a -Db_sanitize=thread or address build).
. "$(dirname "$0")/lib.sh"
need socat sha256sum

make_data data $((2 * 1024 * 1024))
bg socat "UNIX-LISTEN:$T/B.sock,fork" SYSTEM:'sha256sum'
wait_for_socket "$T/B.sock"
bg "$FERRY" -l -k "unix:$T/A.sock" "unix:$T/B.sock" 2> "$T/err"
ferry=$LAST_PID
wait_for_socket "$T/A.sock"
pids=
for i in 1 2 3 4 5 6; do
    within 60 socat -t 30 - "UNIX-CONNECT:$T/A.sock" < "$T/data" > "$T/sum.$i" & pids="$pids $!"
done
for p in $pids; do wait "$p" || fail "a client exited $?"; done
for i in 1 2 3 4 5 6; do
    assert_eq "$(sha "$T/data")" "$(cut -d' ' -f1 "$T/sum.$i")" "client $i's bytes"
done
kill -TERM "$ferry"
rc=0; wait_exit 20 "$ferry" || rc=$?
assert_eq 0 "$rc" "ferry's exit code after SIGTERM"
if grep -q "Sanitizer" "$T/err"; then fail "sanitizer report: $(head -20 "$T/err")"; fi
