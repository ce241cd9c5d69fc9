#!/usr/bin/env python3
"""A proxy on 127.0.0.1:PORT that answers every connection as MODE says,
for tests/proxy-refusals.sh: the refusals and breakages that real proxies
give only with effort.  It reads the client's whole request first (so the
answer is to that request), and writes what it read, hex, to LOG.
usage: forged-proxy.py PORT MODE LOG
MODE: http-407, http-403, http-garbage, socks5-refused, socks5-no-method,
      socks5-auth-failed, socks4-rejected, close-early, silent"""
import socket
import sys

port, mode, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def read_until(conn, end):
    data = b""
    while not data.endswith(end):
        chunk = conn.recv(1)
        if not chunk:
            raise EOFError
        data += chunk
    return data


def socks5_request(conn):
    """VER CMD RSV ATYP ADDR PORT, after the greeting."""
    head = read_exact(conn, 4)
    atyp = head[3]
    if atyp == 1:
        rest = read_exact(conn, 4 + 2)
    elif atyp == 4:
        rest = read_exact(conn, 16 + 2)
    else:
        n = read_exact(conn, 1)
        rest = n + read_exact(conn, n[0] + 2)
    return head + rest


def serve(conn):
    got = b""
    if mode.startswith("http-"):
        got = read_until(conn, b"\r\n\r\n")
        answer = {
            "http-407": b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                        b"Proxy-Authenticate: Basic realm=\"forged\"\r\n\r\n",
            "http-403": b"HTTP/1.0 403 Forbidden\r\nContent-Length: 5\r\n\r\nnope\n",
            "http-garbage": b"SSH-2.0-OpenSSH_9.2\r\n",
        }[mode]
        conn.sendall(answer)
    elif mode.startswith("socks5-"):
        greeting = read_exact(conn, 2)
        got = greeting + read_exact(conn, greeting[1])
        if mode == "socks5-no-method":
            conn.sendall(b"\x05\xff")
        elif mode == "socks5-auth-failed":
            conn.sendall(b"\x05\x02")
            head = read_exact(conn, 2)
            user = read_exact(conn, head[1])
            plen = read_exact(conn, 1)
            got += head + user + plen + read_exact(conn, plen[0])
            conn.sendall(b"\x01\x01")
        else:
            conn.sendall(b"\x05\x00")
            got += socks5_request(conn)
            conn.sendall(b"\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
    elif mode == "socks4-rejected":
        got = read_exact(conn, 8)
        got += read_until(conn, b"\0")
        if got[4:7] == b"\0\0\0":
            got += read_until(conn, b"\0")
        conn.sendall(b"\x00\x5b\x00\x00\x00\x00\x00\x00")
    elif mode == "close-early":
        got = conn.recv(4096)
    elif mode == "silent":
        got = conn.recv(4096)
        conn.recv(4096)         # until the client gives up
    with open(log, "a") as f:
        f.write(got.hex() + "\n")


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(16)
while True:
    conn, _ = listener.accept()
    try:
        serve(conn)
    except (EOFError, ConnectionError):
        pass
    conn.close()
