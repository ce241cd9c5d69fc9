#!/usr/bin/env python3
# A TCP or UNIX listener for the nc tests: each connection is served in its
# own process.  MODE:
#   echo [LOG]  send back what comes, close at EOF (then add a line to LOG)
#   late D H    after D s send "late\n", close H s later (what came is
#               read, so the close is no reset)
#   capture F   write what comes to F, close at EOF
#   peer        send "ADDR PORT\n" of the client, close
# ADDR is a UNIX path, or HOST:PORT.
import ctypes, os, signal, socket, sys, time

addr, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if ':' in addr and not addr.startswith('/'):
    host, port = addr.rsplit(':', 1)
    s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, int(port)))
else:
    s = socket.socket(socket.AF_UNIX)
    s.bind(addr)
s.listen(16)
while True:
    c, peer = s.accept()
    if os.fork():
        c.close()
        continue
    s.close()
    # Gone with the listener, which the test stops by its PID.
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if mode == 'echo':
        while (b := c.recv(65536)):
            c.sendall(b)
        c.close()
        if args:
            with open(args[0], 'a') as f:
                f.write('closed\n')
    elif mode == 'late':
        time.sleep(float(args[0]))
        c.sendall(b'late\n')
        time.sleep(float(args[1]))
        c.setblocking(False)
        try:
            while c.recv(65536):
                pass
        except BlockingIOError:
            pass
    elif mode == 'capture':
        with open(args[0] + '.part', 'wb') as f:
            while (b := c.recv(65536)):
                f.write(b)
        os.rename(args[0] + '.part', args[0])
    elif mode == 'peer':
        c.sendall(('%s %d\n' % (peer[0], peer[1])).encode())
    c.close()
    os._exit(0)
