#!/usr/bin/env bash
# --streams=4, a download whose link stops carrying ferry's bytes just as
# the first channel starts, so that opening channels 2 to 4 waits for
# ever: SIGTERM still ends the copy within seconds (143, the first
# stream's stop line, and none of the other streams ever ran).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
need python3
start_sshd main /usr/bin:/bin
serve src sparse-random size=1G seed=1 percent=30
serve dst memory size=1G

# A TCP proxy in front of sshd that holds the bytes from ferry while
# $T/frozen exists.
port=$(free_port)
echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$SSH_DIR/host_ed25519.pub")" >> "$SSH_DIR/known_hosts"
cat > "$T/proxy.py" <<'PY'
import os, select, socket, sys
port, target, frozen = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(1)
client, _ = listener.accept()
server = socket.create_connection(("127.0.0.1", target))
while True:
    readable = [server] + ([] if os.path.exists(frozen) else [client])
    for sock in select.select(readable, [], [], 0.05)[0]:
        data = sock.recv(65536)
        if not data:
            sys.exit(0)
        (server if sock is client else client).sendall(data)
PY
bg python3 "$T/proxy.py" "$port" "$SSHD_PORT" "$T/frozen"
wait_for_port "$port"

# The first remote sender's header is held for a second, once it is
# written: the link is frozen meanwhile, before the first channel is up
# and the others are opened.
cat > "$T/helper" <<HELPER
#!/bin/bash
if mkdir "$T/first" 2> /dev/null; then
    "$FERRY" "\$@" | { head -c 36 > "$T/header"; touch "$T/header-written"; sleep 1
                       cat "$T/header"; exec cat; }
    exit \${PIPESTATUS[0]}
fi
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"

env HOME="$SSH_HOME" SSH_AUTH_SOCK= "$FERRY" --remote-helper="$T/helper" \
    --nbd-receive="$(uri dst)" --remote-nbd-send="$(uri src)" --streams=4 \
    "ssh://$(id -un)@127.0.0.1:$port?keyfile=$SSH_KEY" 2> "$T/err" &
pid=$!
track $pid
wait_until 20 test -e "$T/header-written"
touch "$T/frozen"
# The header reaches ferry (sshd to ferry still flows), the first channel
# is up, and ferry opens the others over the frozen link.
sleep 2
stop_copy "$pid" "$T/err" 5
assert_contains "$T/err" "ferry: stopped by SIGTERM" "the stop line"
! grep -E '\(stream [234]\)' "$T/err" || fail "a stream other than the first ran"
