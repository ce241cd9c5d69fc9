#!/usr/bin/env python3
"""Run COMMAND on a new pty, as its controlling terminal, and answer its
password prompts (a line that ends in "password: ", or that asks for a
passphrase).

  on-a-pty.py type COMMAND...   types $PTY_ANSWER and Enter at each prompt
  on-a-pty.py TERM COMMAND...   sends SIGTERM at the first prompt
  on-a-pty.py INT COMMAND...    types ^C at the first prompt (SIGINT)

Prints COMMAND's exit code (128 + N for signal N; "still running" if it had
to be killed after a signal, "no prompt" if it ran 60 s without one), then
"echo on" or "echo off" (the terminal's echo as COMMAND left it), then what
COMMAND wrote on the terminal."""
import os, pty, select, signal, sys, termios, time

how, argv = sys.argv[1], sys.argv[2:]
pid, master = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
out, prompts_seen, sent, status = b"", 0, None, None


def prompts(text):
    return text.count(b"password: ") + text.lower().count(b"passphrase")



deadline = time.monotonic() + 60
while status is None and time.monotonic() < deadline:
    if select.select([master], [], [], 0.1)[0]:
        try:
            out += os.read(master, 4096)
        except OSError:
            pass
    if prompts(out) > prompts_seen and sent is None:
        prompts_seen += 1
        if how == "type":
            os.write(master, os.environ["PTY_ANSWER"].encode() + b"\n")
        else:
            time.sleep(0.3)            # the command waits for the answer
            if how == "TERM":
                os.kill(pid, signal.SIGTERM)
            else:
                os.write(master, b"\x03")
            sent = time.monotonic()
            deadline = sent + 5
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        status = os.waitstatus_to_exitcode(st)
# What the command wrote just before it exited may still wait in the pty
# (EIO once it is drained and the child gone).
while select.select([master], [], [], 0.5)[0]:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
if status is None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    print("still running" if sent else "no prompt")
else:
    print(status if status >= 0 else 128 - status)
print("echo", "on" if termios.tcgetattr(master)[3] & termios.ECHO else "off")
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
