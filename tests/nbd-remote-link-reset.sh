#!/usr/bin/env bash
# A remote copy whose TCP connection is reset mid-copy (tests/reset-proxy.py
# between ferry and sshd sends an RST each way, as a NAT or firewall that
# drops the connection), each way, with 1 and 4 streams (issue 25): the
# copy ends within seconds with exit 25 and one line naming the host.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3
start_sshd main /usr/bin:/bin
slow_remote_copy_setup
proxy_port=$(free_port)
bg python3 "$(dirname "$0")/reset-proxy.py" "$proxy_port" "$SSHD_PORT" "$T/reset"
wait_for_port "$proxy_port"
echo "[127.0.0.1]:$proxy_port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
REMOTE_HELPER=$T/helper
host=$(id -un)@127.0.0.1:$proxy_port
resetter () {
    wait_until 20 test -s "$T/remote.pids"
    wait_until 20 remote_moved 1048576
    touch "$T/reset"
}
for streams in 1 4; do
    for way in up down; do
        slow_exports_alive
        rm -f "$T/remote.pids"
        resetter &
        start=$SECONDS
        SSHD_PORT=$proxy_port remote_copy "$way" "$(uri src)" "$(uri dst)" --request-size=256K \
            --in-flight=256K --streams=$streams 2> /dev/null
        wait $!
        what="$way, --streams=$streams"
        assert_link_lost "$what" "$start" 10 "$host"
        echo "$what ($((SECONDS - start)) s): $(cat "$T/remote.err")"
    done
done
