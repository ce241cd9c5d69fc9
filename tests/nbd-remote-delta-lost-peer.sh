#!/usr/bin/env bash
# --delta, a sender lost while the receiver computes DST's digests (a dense
# DST whose reads take 1 s each, one at a time: 16 s for the range): the
# receiver reads its stream meanwhile, so it ends within seconds, with
# its line and exit code, not after the range's reads.  Each way: the
# local ferry SIGKILLed under an upload's remote receiver, the remote
# ferry SIGKILLed under a download's local receiver.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
start_sshd main /usr/bin:/bin
serve_src () { serve src sparse-random size=16M seed=4 percent=100; src_pid=$LAST_PID; }
serve_src
# DST, one for each way, logging its requests to $T/NAME.log.
serve_dst () {  # NAME
    serve "$1" --filter=log --filter=delay sparse-random size=16M seed=3 percent=100 rdelay=1 \
        logfile="$T/$1.log"
}
serve_dst dst-up
serve_dst dst-down
host=root@127.0.0.1:$SSHD_PORT
# The remote helpers note their PIDs, each way in its own file (a channel
# whose exec request was on its way still runs after its ferry was
# killed); the upload's keeps the remote ferry's stderr and exit code, the
# download's is the remote ferry.
cat > "$T/helper-up" <<HELPER
#!/bin/sh
echo \$\$ >> "$T/up.pids"
"$FERRY" "\$@" 2> "$T/remote-\$\$.err"
echo \$? > "$T/remote-\$\$.rc"
HELPER
cat > "$T/helper-down" <<HELPER
#!/bin/sh
echo \$\$ >> "$T/down.pids"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper-up" "$T/helper-down"
# A failed run's remote ferries (not this shell's children), by PID.
kill_remote_halves () {
    local p q
    for p in $(cat "$T/up.pids" "$T/down.pids" 2> /dev/null); do
        for q in $p $(pgrep -P "$p"); do
            grep -qF "$T/" "/proc/$q/cmdline" 2> /dev/null && kill -KILL "$q" 2> /dev/null
        done
    done
    true
}
cleanup_fn kill_remote_halves
reading () { grep -q ' Read ' "$T/$1.log" 2> /dev/null; }  # NAME
copy_args=(--streams=2 --delta --request-size=256K --in-flight=256K "$(ssh_base)?keyfile=$SSH_KEY")
no_local_half () { ! pgrep -f -- "--remote-helper=$T/helper-$1" > /dev/null; }

# Upload: the remote receiver of range 0 is computing its digests.
env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper-up" \
    --nbd-send="$(uri src)" --remote-nbd-receive="$(uri dst-up)" "${copy_args[@]}" 2> "$T/local.err" &
local_pid=$!
wait_until 60 reading dst-up
kill -9 "$local_pid"
wait "$local_pid" || true
ended () { for p in $(cat "$T/up.pids"); do test -s "$T/remote-$p.rc" || return 1; done; }
wait_until 5 ended
wait_until 5 no_local_half up
# The remote receiver that held range 0 (the image's one range) says
# where its stream was cut and where DST is complete in it, and exits 21.
# Stream 2's, which had no range to hold, ended by the moment of the
# kill: at once without a word (0), or on its cut stream (21) or channel
# (4), with one line.
ranged=0
for p in $(cat "$T/up.pids"); do
    case $(cat "$T/remote-$p.err") in
    *"in the range at offset"*)
        ranged=$((ranged + 1))
        assert_eq 21 "$(cat "$T/remote-$p.rc")" "upload: remote receiver $p: exit code"
        assert_eq "ferry: stream truncated before the END record (stream byte 60, export offset 0); in the range at offset 0 (16777216 bytes), $(uri dst-up) is complete up to offset 0 (flushed)" \
            "$(cat "$T/remote-$p.err")" "upload: remote receiver $p: the one line" ;;
    *)
        case $(cat "$T/remote-$p.rc") in 0|4|21) ;; *) fail "upload: remote receiver $p: exit $(cat "$T/remote-$p.rc")" ;; esac
        [ "$(wc -l < "$T/remote-$p.err")" -le 1 ] || fail "upload: remote receiver $p: more than one line" ;;
    esac
done
assert_eq 1 "$ranged" "upload: remote receivers that held range 0"

# Download: the local receiver of range 0 is computing its digests when
# its remote sender is killed.  (SRC's server may have gone with the
# killed upload: serve_again_if_dead.)
serve_again_if_dead src "$src_pid" serve_src
env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper-down" \
    --nbd-receive="$(uri dst-down)" --remote-nbd-send="$(uri src)" "${copy_args[@]}" 2> "$T/local.err" &
local_pid=$!
wait_until 60 reading dst-down
# The one remote sender still running is stream 1's: the image is one
# range, and stream 2's ended when it heard there was none for it.
alive () { local p; for p in $(cat "$T/down.pids"); do kill -0 "$p" 2> /dev/null && echo "$p"; done; }
one_alive () { first=$(alive); [ "$(echo "$first" | wc -w)" = 1 ]; }
wait_until 10 one_alive
kill -9 "$first"
start=$SECONDS
wait_rc 10 "$local_pid"
cat "$T/local.err" >&2
[ $((SECONDS - start)) -le 5 ] || fail "download: took $((SECONDS - start)) s"
assert_eq 24 "$rc" "download: exit code"
# The local receiver says where DST is complete, on that line: in range 0,
# or before it if the sender was killed before its RANGE record.
killed="ferry: $host (stream 1): the remote half was killed by SIGKILL (ran: '$T/helper-down' '--nbd-send=$(uri src)' '--request-size=262144' '--in-flight=262144' '--ranged' '--delta')"
case $(cat "$T/local.err") in
"$killed; in the range at offset 0 (16777216 bytes), $(uri dst-down) is complete up to offset 0 (flushed)") ;;
"$killed; the ranges $(uri dst-down) answered for are complete (flushed)") ;;
*) fail "download: not the one line expected: $(cat "$T/local.err")" ;;
esac
wait_until 5 no_local_half down
