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
// swapped in between is caught too. Cross-mount hard links cannot exist (EXDEV).
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
def mount_of(p):
    best = None
    for m in MOUNTS:
        if p == m or p.startswith(m.rstrip('/') + '/'):
            if best is None or len(m) > len(best):
                best = m
    return best
def fenced(lexical, real):
    a = mount_of(os.path.normpath(lexical))
    if a != mount_of(real):
        where = ('the mount ' + a) if a is not None else "the image's own files"
        fail('mount_boundary', '%s leads out of %s through a link' % (req['path'], where))
def check(p):
    fenced(p, os.path.realpath(p))
def check_fd(p, fd):
    fenced(p, os.readlink('/proc/self/fd/%d' % fd))
try:
    op = req['op']
    path = os.path.join(req['base'], req['path'])
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
        os.execv(req['argv'][0], req['argv'])
except OSError as e:
    fail(errno.errorcode.get(e.errno, 'EIO'), e.strerror or str(e))
except UnicodeError as e:
    fail('not_utf8', 'the text is not valid UTF-8 (%s); nothing was written' % e.reason)
`;
