// The call supervisor: the process every tool call's exec starts (call-supervisor.ts says
// what cfh asks of it and reads back). python3, started isolated like the file helper
// (-I -S -B, by absolute path on the image's read-only root), with every variable of the
// call's env blanked for itself, so nothing the profile sets (LD_PRELOAD, PYTHON*) reaches
// it. It reads one request on stdin, runs the command and keeps its stdin open as cfh's
// channel: a word there, or its end (cfh gone), stops the call, as the call's deadline does.
//
// The call's processes are the supervisor's session (AH-LIFE-3): the engine starts every
// exec as a session leader, and before the command is spawned the supervisor stacks a
// seccomp filter on the container's, inherited by everything the command starts and never
// removable, that makes setsid do nothing while saying it did. So no process of the call can
// leave the session: not by setsid, a double fork, daemonizing or clearing its environment;
// and a session id stays taken while any process holds it (Linux; gVisor checks it too), so
// no other process can come to share it. To stop the call the supervisor SIGKILLs every live
// process of its session until none is left (bounded), never another session's (the
// container's init, another call's, what an earlier call left running), and says so. The
// same filter keeps the call from signalling the supervisor (its pid, its group, every
// process at once), joining its process group, or owning, tracing, limiting or lowering it;
// the supervisor is not dumpable, so its memory, its descriptors (cfh's channel) and its
// /proc files are out of the call's reach. What the call prints is kept here, bounded, and
// sent with the report, so the exec's output is the supervisor's alone. The command is
// spawned (vfork and exec), not forked: under gVisor every address space costs host threads,
// which the pids limit counts.
export const CALL_SUPERVISOR = String.raw`
import _signal as signal, binascii, ctypes, errno, os, select, sys, time

PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 4, 22, 38
libc = ctypes.CDLL(None, use_errno=True)


def prctl(option, arg, ptr=None):
    rc = libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg),
                    ctypes.c_ulong(0) if ptr is None else ptr, ctypes.c_ulong(0), ctypes.c_ulong(0))
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, 'prctl(%d): %s' % (option, os.strerror(e)))


# What the engine gave this process, read before Python changed any of it (its locale
# coercion), and the score the kernel's OOM killer goes by, opened while /proc/self is
# still this process's to open (it is written through once the process is not dumpable).
with open('/proc/self/environ', 'rb') as f:
    ENVIRON = f.read()
try:
    OOM = open('/proc/self/oom_score_adj', 'w')
except OSError:
    OOM = None
prctl(PR_SET_DUMPABLE, 0)
ME, START = os.getpid(), time.monotonic()
if os.getsid(0) != ME:
    os.setsid()  # the engine starts execs as session leaders; this one was not
GROUP = os.getpgrp()


class Request:
    # 'cfh-call/1 TIMEOUT_MS STOP_BOUND_MS MAX_OUTPUT_BYTES STDIN_BYTES|- ARGC ENVC' and a
    # line feed, then ARGC + 2 ENVC netstrings ('LEN:BYTES,': argv, then each env name and
    # value), then the stdin; what follows is cfh's word. (No json: importing it would be
    # most of a start's cost, as signal's enum and base64's would.)
    def __init__(self):
        self.buf = b''
        head = self.line().split(b' ')
        if len(head) != 7 or head[0] != b'cfh-call/1':
            os._exit(2)
        self.timeout_ms, self.stop_bound_ms, self.max_output = (int(x) for x in head[1:4])
        size = None if head[4] == b'-' else int(head[4])
        argc, envc = int(head[5]), int(head[6])
        self.argv = [self.netstring() for _ in range(argc)]
        self.env = {}
        for _ in range(envc):
            key = self.netstring()
            self.env[key] = self.netstring()
        self.stdin = None if size is None else self.take(size)
        self.early = self.buf  # bytes after the request: cfh's word already

    def fill(self, n):
        while len(self.buf) < n:
            chunk = os.read(0, 65536)
            if not chunk:
                os._exit(2)
            self.buf += chunk

    def take(self, n):
        self.fill(n)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def line(self):
        while b'\n' not in self.buf:
            self.fill(len(self.buf) + 1)
        line, self.buf = self.buf.split(b'\n', 1)
        return line

    def netstring(self):
        while b':' not in self.buf:
            self.fill(len(self.buf) + 1)
        size, self.buf = self.buf.split(b':', 1)
        data = self.take(int(size) + 1)
        if data[-1:] != b',':
            os._exit(2)
        return data[:-1]


def command_env(own):
    env = {}
    for item in ENVIRON.split(b'\0'):
        key, sep, value = item.partition(b'=')
        if sep and key not in own:
            env[key] = value
    env.update(own)
    return env


X86_64, I386, X32 = 0xC000003E, 0x40000003, 0x40000000
ALLOW, EPERM, NOTHING = 0x7FFF0000, 0x00050001, 0x00050000
LD, AND, JEQ, JA, RET = 0x20, 0x54, 0x15, 0x05, 0x06


def u32(v):
    return v & 0xFFFFFFFF


def call_rules():
    # (syscall numbers per ABI, x32's own numbers folded into x86_64's, the action, and
    # when: any of the argument conditions, each all of its (argument, value) pairs).
    me, groups = ME, sorted({u32(-GROUP), u32(-ME)})
    return [
        ({'x86_64': [112], 'i386': [66]}, NOTHING, [[]]),  # setsid
        ({'x86_64': [62], 'i386': [37]}, EPERM, [[(0, me)], [(0, u32(-1))]] + [[(0, g)] for g in groups]),  # kill
        ({'x86_64': [200], 'i386': [238]}, EPERM, [[(0, me)]]),  # tkill
        ({'x86_64': [234], 'i386': [270]}, EPERM, [[(0, me)]]),  # tgkill
        ({'x86_64': [129, 524], 'i386': [178]}, EPERM, [[(0, me)]]),  # rt_sigqueueinfo
        ({'x86_64': [297, 536], 'i386': [335]}, EPERM, [[(0, me)]]),  # rt_tgsigqueueinfo
        ({'x86_64': [424], 'i386': [424]}, EPERM, [[]]),  # pidfd_send_signal: a /proc dir fd names anyone
        ({'x86_64': [434], 'i386': [434]}, EPERM, [[(0, me)]]),  # pidfd_open
        ({'x86_64': [302], 'i386': [340]}, EPERM, [[(0, me)]]),  # prlimit64
        ({'x86_64': [101, 521], 'i386': [26]}, EPERM, [[(1, me)]]),  # ptrace
        ({'x86_64': [311, 540], 'i386': [348]}, EPERM, [[(0, me)]]),  # process_vm_writev
        # fcntl F_SETOWN to the supervisor or its group; F_SETOWN_EX, whose owner lies in memory
        ({'x86_64': [72], 'i386': [55, 221]}, EPERM,
         [[(1, 8), (2, me)]] + [[(1, 8), (2, g)] for g in groups] + [[(1, 15)]]),
        ({'x86_64': [16, 514], 'i386': [54]}, EPERM, [[(1, 0x8901)], [(1, 0x8902)]]),  # ioctl FIOSETOWN, SIOCSPGRP
        ({'x86_64': [141], 'i386': [97]}, EPERM, [[(0, 0), (1, me)], [(0, 1), (1, GROUP)], [(0, 2)]]),  # setpriority
        ({'x86_64': [109], 'i386': [57]}, EPERM, [[(1, GROUP)]]),  # setpgid into the supervisor's group
    ]


def filter_program():
    items, count = [], [0]

    def label():
        count[0] += 1
        return 'L%d' % count[0]

    def ins(code, k=0, jt=0, jf=0):
        items.append((code, k, jt, jf))

    def load_nr(abi):
        ins(LD, 0)
        if abi == 'x86_64':
            ins(AND, u32(~X32))

    def rules(abi):
        load_nr(abi)
        for numbers, action, conditions in call_rules():
            for nr in numbers[abi]:
                skip, deny, restore = label(), label(), label()
                ins(JEQ, nr, 0, skip)
                for i, cond in enumerate(conditions):
                    nxt = label() if i + 1 < len(conditions) else restore
                    if not cond:
                        ins(RET, action)
                    for j, (arg, value) in enumerate(cond):
                        ins(LD, 16 + 8 * arg)  # the argument's low word: pids are 32-bit
                        ins(JEQ, value, deny if j + 1 == len(cond) else 0, nxt)
                    if nxt != restore:
                        items.append(nxt)
                items.append(restore)
                load_nr(abi)
                ins(JA, skip)
                items.append(deny)
                ins(RET, action)
                items.append(skip)
        ins(RET, ALLOW)

    ins(LD, 4)
    ins(JEQ, X86_64, 0, 1)
    ins(JA, 'x86_64')
    ins(JEQ, I386, 0, 1)
    ins(JA, 'i386')
    ins(RET, ALLOW)  # another ABI: the container's filter alone decides
    for abi in ('x86_64', 'i386'):
        items.append(abi)
        rules(abi)
    at, n = {}, 0
    for it in items:
        if isinstance(it, tuple):
            n += 1
        else:
            at[it] = n
    out = []
    for it in items:
        if not isinstance(it, tuple):
            continue
        code, k, jt, jf = it
        rel = lambda t: t if isinstance(t, int) else at[t] - len(out) - 1
        k = u32(rel(k) if code == JA else k)
        out.append(code.to_bytes(2, sys.byteorder) + bytes([rel(jt), rel(jf)]) + k.to_bytes(4, sys.byteorder))
    return b''.join(out)


class SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]


def confine():
    # On the supervisor itself, so the command inherits it from its first instruction; the
    # supervisor does none of what it refuses.
    prog = filter_program()
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECCOMP, 2, ctypes.byref(fprog))


def resolve(name, env):
    # As execvp looks a name up, in the command's PATH (the supervisor's own is blanked).
    if b'/' in name:
        return name, 0
    found = errno.ENOENT
    for d in env.get(b'PATH', b'/bin:/usr/bin').split(b':'):
        path = os.path.join(d or b'.', name)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path, 0
            found = errno.EACCES
    return None, found


def oom_score(value):
    # At the memory limit the kernel kills a process of the call before the supervisor: the
    # command inherits a higher score, and the supervisor goes back to its own.
    try:
        OOM.seek(0)
        OOM.write(value)
        OOM.flush()
    except (AttributeError, OSError, ValueError):
        pass


def spawn(req, env, stdin_fd, out_w, err_w):
    argv = req.argv
    path, code = resolve(argv[0], env)
    if path is None:
        return None, code
    signals = set(signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}
    oom_score('500')
    try:
        return os.posix_spawn(
            path, argv, env,
            file_actions=[(os.POSIX_SPAWN_DUP2, stdin_fd, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                          (os.POSIX_SPAWN_DUP2, err_w, 2)],
            # Its own process group, out of reach of the supervisor's (kill 0 works as ever);
            # every signal at its default (python ignores SIGPIPE and SIGXFSZ), none blocked.
            setpgroup=0, setsigdef=signals, setsigmask=()), 0
    except OSError as e:
        return None, e.errno or errno.ENOEXEC
    except ValueError:  # a NUL byte in argv or the env
        return None, errno.EINVAL
    finally:
        oom_score('0')


def session_of(pid):
    with open('/proc/%d/stat' % pid, 'rb') as f:
        s = f.read()
    fields = s[s.rindex(b')') + 2:].split()
    return fields[0], int(fields[3])  # state, session


def members(session):
    live = []
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) in (1, ME):
            continue
        try:
            state, sid = session_of(int(name))
        except (OSError, ValueError, IndexError):
            continue
        if sid == session and state != b'Z':
            live.append(int(name))
    return live


def kill(pid, session):
    # Checked again just before: a pid leaves the session only by ending, and a freed pid
    # is taken again only after the pid space wraps around.
    try:
        if session_of(pid)[1] != session:
            return False
        os.kill(pid, signal.SIGKILL)
        return True
    except (OSError, ValueError, IndexError):
        return False


def reap(pid, status):
    if status is not None:
        return status
    try:
        got, st = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return status
    return st if got == pid else None


def stop(session, pid, status, bound):
    t0, killed = time.monotonic(), set()
    while True:
        status = reap(pid, status)
        live = members(session)
        gone = not live
        if gone or time.monotonic() - t0 > bound:
            ms = round((time.monotonic() - t0) * 1000, 1)
            return status, {'session': session, 'processes': len(killed), 'ms': ms, 'gone': gone}
        for p in live:
            if kill(p, session):
                killed.add(p)
        time.sleep(0.001)


class Capture:
    def __init__(self, limit):
        self.limit, self.kept, self.seen = limit, b'', 0

    def add(self, data):
        self.seen += len(data)
        if len(self.kept) < self.limit:
            self.kept += data[:self.limit - len(self.kept)]

    def report(self):
        return {'data': binascii.b2a_base64(self.kept, newline=False).decode('ascii'),
                'bytes': self.seen, 'truncated': self.seen > len(self.kept)}


def encode(v):
    # JSON of what a report holds: dicts, numbers, booleans, null and strings (escaped whole).
    if v is None or isinstance(v, bool):
        return {None: 'null', True: 'true', False: 'false'}[v]
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return '{' + ','.join('"%s":%s' % (k, encode(x)) for k, x in v.items()) + '}'
    units = v.encode('utf-16-be', 'surrogatepass')
    chars = (chr(units[i] << 8 | units[i + 1]) for i in range(0, len(units), 2))
    return '"' + ''.join(c if ' ' <= c <= '~' and c not in '"\\' else '\\u%04x' % ord(c)
                         for c in chars) + '"'


def finish(result, out, err):
    result['stdout'], result['stderr'] = out.report(), err.report()
    data = (encode(result) + '\n').encode('ascii')
    while data:
        data = data[os.write(1, data):]
    os._exit(0)


def started(req):
    env = command_env(req.env)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if req.stdin is None:
        stdin_fd, in_w = os.open('/dev/null', os.O_RDONLY), None
    else:
        stdin_fd, in_w = os.pipe()
    pid, code = spawn(req, env, stdin_fd, out_w, err_w)
    for fd in (out_w, err_w, stdin_fd):
        os.close(fd)
    return pid, code, out_r, err_r, in_w


def main():
    req = Request()
    deadline = START + req.timeout_ms / 1000.0
    out, err = Capture(req.max_output), Capture(req.max_output)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    try:
        confine()
    except OSError as e:
        finish({'setup': 'seccomp: %s' % e}, out, err)
    pid, code, out_r, err_r, in_w = started(req)
    if pid is None:
        err.add(b"cfh: cannot run '%s': %s\n" % (req.argv[0], os.strerror(code).encode()))
        finish({'exit': 127 if code in (errno.ENOENT, errno.ENOTDIR) else 126, 'signal': None,
                'timedOut': False, 'stopped': None}, out, err)
    poller = select.poll()
    reading = {out_r: out, err_r: err}
    for fd in (out_r, err_r, wake_r, 0):
        poller.register(fd, select.POLLIN)
    pending = req.stdin or b''
    if in_w is not None:
        os.set_blocking(in_w, False)
        poller.register(in_w, select.POLLOUT)
    status, why = None, 'cancelled' if req.early else None
    while why is None:
        status = reap(pid, status)
        if status is not None and not reading:
            break
        left = deadline - time.monotonic()
        if left <= 0:
            why = 'timeout'
            break
        for fd, _ in poller.poll(min(left, 3600) * 1000):
            if fd == 0:
                why = 'cancelled'  # a word from cfh, or the end of its stream
            elif fd == wake_r:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
            elif fd == in_w:
                try:
                    pending = pending[os.write(in_w, pending[:65536]):]
                except BrokenPipeError:
                    pending = b''
                if not pending:
                    poller.unregister(in_w)
                    os.close(in_w)
                    in_w = None
            elif fd in reading:
                data = os.read(fd, 65536)
                if data:
                    reading[fd].add(data)
                else:
                    poller.unregister(fd)
                    del reading[fd]
                    os.close(fd)
    stopped = None
    if why is not None:
        status, stopped = stop(ME, pid, status, req.stop_bound_ms / 1000.0)
        stopped['why'] = why
        for fd, capture in reading.items():
            os.set_blocking(fd, False)
            try:
                data = os.read(fd, 65536)
                while data:
                    capture.add(data)
                    data = os.read(fd, 65536)
            except BlockingIOError:
                pass
    if status is None:
        code, sig = None, None
    elif os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        code = 128 + sig
    else:
        code, sig = os.WEXITSTATUS(status), None
    finish({'exit': code, 'signal': sig, 'timedOut': why == 'timeout', 'stopped': stopped}, out, err)


main()
`;
