#!/usr/bin/env python3
"""A UDP peer for tests/nc-udp.sh that records every datagram whole.

  udp-peer.py server HOST PORTFILE LOG
      Bind HOST on a free port (written to PORTFILE), then log each datagram
      received, and answer each one that starts with "ping" with "pong:" and
      the datagram, to its sender.  Runs until killed.
  udp-peer.py client HOST PORT LOG SPEC...
      From one socket, send each SPEC to HOST PORT in turn, logging every
      datagram received.  SPEC is "send:TEXT" (\\n for a newline), "size:N"
      (N bytes of a pattern), "empty" (a datagram of 0 bytes), or "recv" (wait
      up to 10 s for one datagram).  Exits when the SPECs are done.

A LOG line is "SIZE SHA256-PREFIX TEXT", TEXT the datagram's first 40
bytes escaped (a newline as \\n), so a test compares sizes, contents and
order.
"""
import hashlib
import os
import socket
import sys


def log_line(log, data):
    text = data[:40].decode('latin-1').encode('unicode_escape').decode()
    log.write('%d %s %s\n' % (len(data), hashlib.sha256(data).hexdigest()[:16], text))
    log.flush()


def make_socket(host):
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    return socket.socket(family, socket.SOCK_DGRAM)


def server(host, portfile, logname):
    s = make_socket(host)
    s.bind((host, 0))
    with open(portfile + '.tmp', 'w') as f:
        f.write('%d\n' % s.getsockname()[1])
    os.rename(portfile + '.tmp', portfile)
    with open(logname, 'w') as log:
        while True:
            data, sender = s.recvfrom(70000)
            log_line(log, data)
            if data.startswith(b'ping'):
                s.sendto(b'pong:' + data, sender)


def client(host, port, logname, specs):
    s = make_socket(host)
    s.connect((host, int(port)))
    with open(logname, 'w') as log:
        for spec in specs:
            if spec == 'recv':
                s.settimeout(10)
                log_line(log, s.recv(70000))
            elif spec == 'empty':
                s.send(b'')
            elif spec.startswith('size:'):
                n = int(spec[5:])
                s.send(bytes(i % 251 for i in range(n)))
            elif spec.startswith('send:'):
                s.send(spec[5:].replace('\\n', '\n').encode())
            else:
                sys.exit('udp-peer.py: unknown spec %r' % spec)


if __name__ == '__main__':
    if sys.argv[1] == 'server':
        server(*sys.argv[2:5])
    else:
        client(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
