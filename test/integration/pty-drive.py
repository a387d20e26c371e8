# Drives one command on a real pseudo-terminal, for `cfh sandbox run -it`: the command is
# the pty's session leader (its controlling terminal, stdin, stdout, stderr); the steps (JSON
# on argv[1]) wait for text, type keys, resize the terminal (TIOCSWINSZ on the master: the
# kernel sends SIGWINCH to the foreground process group) or send a signal. At the end it
# prints JSON: what the terminal showed, the exit code, and whether the terminal was left
# in cooked mode (ICANON and ECHO on; tcgetattr on the master reads the pty's termios).
import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

steps = json.loads(sys.argv[1])
argv = sys.argv[2:]
rows, cols = steps.pop(0)["size"]

pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)

fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
out = b""
seen = 0
closed = False


def pump(deadline):
    global out, closed
    while not closed and time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            closed = True
            return
        if not data:
            closed = True
            return
        out += data
        return


failure = None
for step in steps:
    if "wait" in step:
        want = step["wait"].encode()
        deadline = time.time() + step.get("timeout", 60)
        while want not in out[seen:] and not closed and time.time() < deadline:
            pump(deadline)
        at = out.find(want, seen)
        if at < 0:
            failure = "no %r" % step["wait"]
            break
        seen = at + len(want)
    elif "type" in step:
        os.write(fd, step["type"].encode())
    elif "resize" in step:
        r, c = step["resize"]
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", r, c, 0, 0))
    elif "signal" in step:
        os.kill(pid, getattr(signal, step["signal"]))
    elif "sleep" in step:
        time.sleep(step["sleep"])

if failure is not None:
    os.kill(pid, signal.SIGTERM)
deadline = time.time() + 60
status = None
while status is None and time.time() < deadline:
    # The session leader's exit hangs up the pty: read what is left, then reap it.
    pump(time.time() + 0.2)
    done, st = os.waitpid(pid, os.WNOHANG)
    if done == pid:
        status = st
if status is None:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
# The pty's termios outlives the session leader while the master is open.
lflag = termios.tcgetattr(fd)[3]
print(
    json.dumps(
        {
            "output": out.decode("utf-8", "replace"),
            "exitCode": os.waitstatus_to_exitcode(status),
            "cooked": bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO),
            "failure": failure,
        }
    )
)
