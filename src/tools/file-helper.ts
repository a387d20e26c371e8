// The file tools' helper (builtins.ts runs it isolated in the file-tool container): one
// request as JSON on stdin, one reply as JSON on stdout. Exit 0 with a reply, or 3 with an
// error reply; anything else is a failed helper. For `grep` it checks the start path and
// then becomes grep (its output is grep's; an error is a line on stderr, exit 3).
//
// Mount boundary (CFC design 8, a containment rule in every mode): a path whose real path
// (links resolved inside the container) lies in another mount than its lexical path (the
// longest mount target that is the normalized path or a parent of it; none: the image's
// own files) is refused, so the mount a path names is the mount it reads or writes, and the
// label cfh gives the result by that mount (mountOf, AH-CFC-2) is the file's. The name is
// checked before the open and the opened file again after it (/proc/self/fd), so a link
// swapped in between is caught too; grep is handed its opened start (/proc/self/fd/7), not
// the name. Cross-mount hard links cannot exist (EXDEV).
//
// A real path is matched against where each mount really is: the engine mounts a target
// through the image's links (/var/run/secrets lands on /run/secrets when /var/run -> /run),
// so each target is resolved inside the container first, and that place must be a mount
// point of the kernel's table (/proc/self/mountinfo) or the helper refuses every call (a
// component moved since the mount). So /run/secrets/token, lexically the image's own files,
// is refused as leading into the mount /var/run/secrets, and a grep whose start path reaches
// a mount by its real place but not by the path it names is refused too (the label of a
// grep is by the mounts at or below its lexical start).
export const FILE_HELPER = `
import json, os, sys, errno, stat
req = json.load(sys.stdin)
def out(obj):
    sys.stdout.write(json.dumps(obj)); sys.exit(0)
def fail(kind, message):
    if req.get('op') == 'grep':
        sys.stderr.write('%s: %s\\n' % (kind, message)); sys.exit(3)
    sys.stdout.write(json.dumps({'error': kind, 'message': message})); sys.exit(3)
MOUNTS = req['mounts']
def within(p, m):
    return p == m or m == '/' or p.startswith(m.rstrip('/') + '/')
def mount_of(p, places):
    best = None
    for m in MOUNTS:
        if within(p, places[m]) and (best is None or len(places[m]) > len(places[best])):
            best = m
    return best
def unescape(field):
    # mountinfo writes a space, tab, newline and backslash in a path as 3 octal digits.
    parts = field.split(b'%c' % 92)
    out = parts[0]
    for part in parts[1:]:
        out += bytes([int(part[:3], 8)]) + part[3:]
    return os.fsdecode(out)
def kernel_mount_points():
    with open('/proc/self/mountinfo', 'rb') as f:
        return set(unescape(line.split(b' ')[4]) for line in f)
AS_WRITTEN = dict((m, os.path.normpath(m)) for m in MOUNTS)
REAL = dict((m, os.path.realpath(m)) for m in MOUNTS)
def where_mounted():
    moved = [m for m in MOUNTS if REAL[m] != AS_WRITTEN[m] and os.path.exists(m)]
    if moved:
        points = kernel_mount_points()
        lost = [m for m in moved if REAL[m] not in points]
        if lost:
            fail('mount_boundary', 'the mount %s is not at %s, where its path leads now' % (lost[0], REAL[lost[0]]))
def fenced(lexical, real):
    a = mount_of(os.path.normpath(lexical), AS_WRITTEN)
    if a != mount_of(real, REAL):
        where = ('the mount ' + a) if a is not None else "the image's own files"
        fail('mount_boundary', '%s leads out of %s through a link' % (req['path'], where))
def reaches(lexical, real):
    start = os.path.normpath(lexical)
    for m in MOUNTS:
        if within(REAL[m], real) and not within(AS_WRITTEN[m], start):
            fail('mount_boundary', '%s reaches the mount %s as %s, a path it does not name' % (req['path'], m, REAL[m]))
def check(p):
    fenced(p, os.path.realpath(p))
def check_fd(p, fd):
    fenced(p, os.readlink('/proc/self/fd/%d' % fd))
try:
    op = req['op']
    path = os.path.join(req['base'], req['path'])
    where_mounted()
    check(path)
    if op == 'read':
        with open(path, 'rb') as f:
            check_fd(path, f.fileno())
            size = os.fstat(f.fileno()).st_size
            data = f.read(req['limit'] + 1)
        out({'content': data[:req['limit']].decode('utf-8', 'replace'), 'truncated': len(data) > req['limit'], 'size': size})
    elif op == 'write':
        # Encoded before the file is opened: content that cannot be written leaves it as it was.
        data = req['content'].encode('utf-8')
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666), 'wb') as f:
            check_fd(path, f.fileno())
            f.truncate(0)
            f.write(data)
        out({'bytes': len(data)})
    elif op == 'edit':
        # Bytes in, bytes out: line endings (CRLF, a lone CR) stay exactly as they were.
        with open(path, 'rb') as f:
            check_fd(path, f.fileno())
            text = f.read().decode('utf-8')
        n = text.count(req['old'])
        if n != 1:
            fail('match_count', 'old_string occurs %d times; it must occur exactly once' % n)
        data = text.replace(req['old'], req['new'], 1).encode('utf-8')
        with os.fdopen(os.open(path, os.O_WRONLY), 'wb') as f:
            check_fd(path, f.fileno())
            f.truncate(0)
            f.write(data)
        out({'replaced': 1})
    elif op == 'list':
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        check_fd(path, fd)
        def is_dir(n):
            try:
                return stat.S_ISDIR(os.stat(n, dir_fd=fd).st_mode)
            except OSError:
                return False
        names = sorted(os.listdir(fd))
        out({'entries': [n + ('/' if is_dir(n) else '') for n in names]})
    elif op == 'grep':
        # The start is opened once and checked as opened; grep is then given that open
        # directory or file (/proc/self/fd/7), never the name again, so a link swapped in
        # after the check is not what it searches.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            fail('grep', '%s: %s' % (req['path'], e.strerror or str(e)))
        real = os.readlink('/proc/self/fd/%d' % fd)
        fenced(path, real)
        reaches(path, real)
        os.dup2(fd, 7)
        os.execv(req['argv'][0], req['argv'] + ['/proc/self/fd/7'])
except OSError as e:
    fail(errno.errorcode.get(e.errno, 'EIO'), e.strerror or str(e))
except UnicodeError as e:
    fail('not_utf8', 'the text is not valid UTF-8 (%s); nothing was written' % e.reason)
`;
