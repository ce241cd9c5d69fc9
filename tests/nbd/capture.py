#!/usr/bin/env python3
"""Record NBD sessions for the parser's tests and fuzz corpus.

capture.py LISTEN_SOCKET SERVER_SOCKET OUT_PREFIX [COUNT]

Accepts COUNT (default 1) connections on the UNIX socket LISTEN_SOCKET,
relays each to SERVER_SOCKET, and writes OUT_PREFIX-N.nbdrec: records of
1 byte direction (0 client->server, 1 server->client), 4 bytes big-endian
length, then the bytes, in the order they were read.
"""
import os
import selectors
import socket
import struct
import sys


def relay(client, server, out):
    sel = selectors.DefaultSelector()
    sel.register(client, selectors.EVENT_READ, (0, server))
    sel.register(server, selectors.EVENT_READ, (1, client))
    open_dirs = 2
    while open_dirs:
        for key, _ in sel.select():
            direction, peer = key.data
            data = key.fileobj.recv(1 << 20)
            if not data:
                sel.unregister(key.fileobj)
                open_dirs -= 1
                try:
                    peer.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                if direction == 1:  # server gone: the session is over
                    return
                continue
            out.write(struct.pack(">BI", direction, len(data)) + data)
            try:
                peer.sendall(data)
            except OSError:     # the peer left: the session is over
                return


def main():
    listen_path, server_path, prefix = sys.argv[1:4]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    lsock = socket.socket(socket.AF_UNIX)
    if os.path.exists(listen_path):
        os.unlink(listen_path)
    lsock.bind(listen_path)
    lsock.listen(8)
    for n in range(count):
        client, _ = lsock.accept()
        server = socket.socket(socket.AF_UNIX)
        server.connect(server_path)
        with open(f"{prefix}-{n}.nbdrec", "wb") as out:
            relay(client, server, out)
        client.close()
        server.close()
    os.unlink(listen_path)


if __name__ == "__main__":
    main()
