#!/usr/bin/env python3
"""ferry test peer for end-of-stream scenarios: one connection, then exit.

usage: eos-peer.py listen|connect unix:PATH|tcp:HOST:PORT MODE [ARGS]

With "listen" it accepts one connection (a UNIX PATH is replaced; the test
picks the TCP port); with "connect" it dials.  MODEs:

  half-close-first REPLY OUT   send the file REPLY, shutdown(SHUT_WR), then
                               read to EOF; write "BYTES SHA256" to OUT
  both SEND OUT [EXPECT]       send SEND while reading; shutdown(SHUT_WR)
                               as soon as the sending is done; read to EOF;
                               write "BYTES SHA256" of what was read to OUT,
                               or, given EXPECT, "BYTES identical" or "BYTES
                               differ at OFFSET" (faster than hashing)
  send-close REPLY             send REPLY and close() at once, reading nothing
  close-unread SECS            read nothing; close() after SECS seconds

Tests wait for the listener with ss, as for socat (lib.sh eos_peer).
"""
import hashlib
import mmap
import os
import socket
import sys
import threading
import time


def open_socket(role, address):
    if address.startswith("unix:"):
        family, where = socket.AF_UNIX, address[5:]
    elif address.startswith("tcp:"):
        host, port = address[4:].rsplit(":", 1)
        family, where = socket.AF_INET, (host, int(port))
    else:
        sys.exit("eos-peer: bad address " + address)
    s = socket.socket(family, socket.SOCK_STREAM)
    if role == "connect":
        s.connect(where)
        return s
    if family == socket.AF_UNIX:
        try:
            os.unlink(where)
        except FileNotFoundError:
            pass
    else:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(where)
    s.listen(1)
    conn, _ = s.accept()
    s.close()
    return conn


def send_file(conn, path):
    with open(path, "rb") as f:
        conn.sendfile(f)


def read_to_eof(conn, out):
    h, n = hashlib.sha256(), 0
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
    with open(out, "w") as f:
        f.write("%d %s\n" % (n, h.hexdigest()))


def compare_to_eof(conn, out, expect):
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    n, differ = 0, None
    with open(expect, "rb") as f:
        want = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) if os.fstat(f.fileno()).st_size else b""
    while True:
        got = conn.recv_into(buf)
        if not got:
            break
        if differ is None and view[:got] != want[n:n + got]:
            differ = n
        n += got
    if differ is None and n != len(want):
        differ = min(n, len(want))
    with open(out, "w") as f:
        f.write("%d identical\n" % n if differ is None else "%d differ at %d\n" % (n, differ))


def main():
    role, address, mode, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    conn = open_socket(role, address)
    if mode == "half-close-first":
        send_file(conn, args[0])
        conn.shutdown(socket.SHUT_WR)
        read_to_eof(conn, args[1])
    elif mode == "both":
        def sender():
            send_file(conn, args[0])
            conn.shutdown(socket.SHUT_WR)
        t = threading.Thread(target=sender)
        t.start()
        if len(args) > 2:
            compare_to_eof(conn, args[1], args[2])
        else:
            read_to_eof(conn, args[1])
        t.join()
    elif mode == "send-close":
        send_file(conn, args[0])
    elif mode == "close-unread":
        time.sleep(float(args[0]))
    else:
        sys.exit("eos-peer: unknown mode " + mode)
    conn.close()


main()
