#!/usr/bin/env bash
# Stream mode's command line: bad combinations exit 2 with one line;
# --help lists the options; --progress=fd:N writes nbdcopy's N/100 lines
# (a closed or read-only fd N is a usage error);
# --destination-is-zero skips ZERO records and --allocated zeroes with
# NO_HOLE (nbdkit's log shows the commands).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
bad () {  # TEXT ARGS...
    local text=$1 rc; shift
    set +e; "$FERRY" "$@" > /dev/null 2> "$T/err" < /dev/null; rc=$?; set -e
    assert_ferry_error 2 "$rc" "$T/err" "$text"
    assert_eq 1 "$(wc -l < "$T/err")" "one line for $*"
}
bad "exclude each other" --nbd-send=nbd://x --nbd-receive=nbd://y
bad "takes no ADDRESS" --nbd-send=nbd://x unix:/s
bad "--raw goes with" --raw --nbd-digest=nbd://x
bad "go with --nbd-receive" --allocated --nbd-send=nbd://x
bad "--connections: expected 1 to 4" --connections=9 --nbd-send=nbd://x
bad "invalid --request-size" --request-size=1 --nbd-send=nbd://x
bad "invalid --progress" --progress=fd:x --nbd-send=nbd://x
exec 57>&-
bad "invalid --progress 'fd:57': Bad file descriptor" --progress=fd:57 --nbd-send=nbd://x
exec 57< /dev/null
bad "invalid --progress 'fd:57': not open for writing" --progress=fd:57 --nbd-send=nbd://x
exec 57<&-
bad "expected '[ CMD ARGS... ]'" --nbd-send=[
set +e; "$FERRY" --nbd-send=nbd+unix:///?socket=$T/none.sock > /dev/null 2> "$T/err"; rc=$?; set -e
assert_ferry_error 3 "$rc" "$T/err" "cannot connect to nbd+unix:///?socket=$T/none.sock"
"$FERRY" --help-all > "$T/help"
for o in --nbd-send --nbd-receive --nbd-digest --raw --connections --no-extents \
         --destination-is-zero --allocated --no-verify --progress --request-size --in-flight; do
    assert_contains "$T/help" "$o" "--help"
done

serve src sparse-random size=1G seed=7 percent=10
bg nbdkit -f -U "$T/dst.sock" --filter=log memory size=1G logfile="$T/dst.log"
wait_for_socket "$T/dst.sock"
"$FERRY" --nbd-send="$(uri src)" --progress=fd:3 3> "$T/progress" |
    "$FERRY" --nbd-receive="$(uri dst)" --destination-is-zero
assert_eq "100/100" "$(tail -1 "$T/progress")" "last progress line"
! grep -q ' Zero ' "$T/dst.log" || fail "--destination-is-zero zeroed"
qemu-img compare -f raw -F raw "$(uri src)" "$(uri dst)" >&2 || fail "copy differs"
"$FERRY" --nbd-send="$(uri src)" | "$FERRY" --nbd-receive="$(uri dst)" --allocated
grep -q ' Zero .* trim=0' "$T/dst.log" || fail "--allocated: no NO_HOLE zero in $(grep -m3 Zero "$T/dst.log")"
# --progress on a terminal (script(1) gives stderr a pty): a refreshing line.
if command -v script > /dev/null; then
    script -qec "'$FERRY' --progress --nbd-send='$(uri src)' > /dev/null" /dev/null |
        tr '\r' '\n' > "$T/line"
    size_re='[0-9.]+ (B|KiB|MiB|GiB)'
    grep -qE "^[0-9]+:[0-9]{2}:[0-9]{2}  image $size_re [0-9.]+ MiB/s 100%  data $size_re [0-9.]+ MiB/s  zero $size_re [0-9.]+ MiB/s" "$T/line" ||
        fail "progress line: $(cat -v "$T/line")"
fi
