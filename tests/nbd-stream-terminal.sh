#!/usr/bin/env bash
# As gzip and zstd refuse: a stream (or --raw image bytes) is not written
# to a terminal, nor read from one: exit 2 and one line, before any
# export is opened.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
serve src memory size=1M
# python3's pty: ARGS run with stdin and stdout on a new terminal, stderr
# kept; the exit code is theirs.
on_terminal () {
    python3 -c '
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.dup2(3, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
while True:
    try:
        if not os.read(fd, 4096):
            break
    except OSError:
        break
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
' "$@" 3>&2
}
for mode in "--nbd-send=$(uri src)" "--nbd-send=$(uri src) --raw"; do
    rc=0
    # shellcheck disable=SC2086
    on_terminal "$FERRY" $mode 2> "$T/err" || rc=$?
    assert_eq 2 "$rc" "$mode to a terminal: exit code"
    grep -q "^ferry: refusing to write .* to a terminal" "$T/err" || fail "$mode: $(cat "$T/err")"
    assert_eq 1 "$(wc -l < "$T/err")" "$mode: one line"
done
rc=0
on_terminal "$FERRY" --nbd-receive="$(uri src)" 2> "$T/err" || rc=$?
assert_eq 2 "$rc" "--nbd-receive from a terminal: exit code"
grep -q "^ferry: refusing to read an NBD stream from a terminal" "$T/err" || fail "$(cat "$T/err")"
