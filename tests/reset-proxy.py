#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1:LISTEN to 127.0.0.1:TARGET that resets every
connection it carries (SO_LINGER 0, then close: an RST each way, as when a
NAT or firewall drops the connection) when the file TRIGGER appears; it
removes TRIGGER then, and goes on accepting.  For tests/nbd-remote-link-reset.sh.
usage: reset-proxy.py LISTEN TARGET TRIGGER"""
import os
import select
import socket
import struct
import sys

listen_port, target_port, trigger = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(16)
peer = {}                       # socket -> the socket it relays to
while True:
    ready, _, _ = select.select([listener] + list(peer), [], [], 0.02)
    if os.path.exists(trigger):
        for s in list(peer):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        peer.clear()
        os.unlink(trigger)
        continue
    for s in ready:
        if s is listener:
            client, _ = listener.accept()
            server = socket.create_connection(("127.0.0.1", target_port))
            peer[client], peer[server] = server, client
            continue
        if s not in peer:
            continue
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        other = peer[s]
        if data:
            other.sendall(data)
        else:
            # An EOF: pass it on as one, and forget the pair once both ended.
            try:
                other.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            del peer[s]
            if other not in peer:
                s.close()
                other.close()
