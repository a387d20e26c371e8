import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { chmod, chown, lchown, mkdir, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  checkArtifactRoot,
  checkSigningKey,
  isWithin,
  parseMountFlag,
  resolveMounts,
  type MountRequest,
} from '../../src/sandbox/mount-policy.js';
import { swapperOf } from '../../src/path-trust.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;

beforeEach(async () => {
  // realpath: the policy compares resolved paths.
  tmp = realpathSync(await makeTempDir('cfh-mount-'));
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function dir(): string {
  if (tmp === undefined) throw new Error('temp dir not created');
  return tmp;
}

async function subdir(name: string): Promise<string> {
  const p = path.join(dir(), name);
  await mkdir(p, { recursive: true });
  return p;
}

function req(
  source: string,
  target: string,
  mode: 'ro' | 'rw' = 'ro',
  origin = '--mount[0]',
): MountRequest {
  return { source, target, mode, origin };
}

describe('resolveMounts: sources', () => {
  it.each(['/etc', '/proc', '/sys', '/dev', '/run', '/var/run', '/boot'])(
    'refuses the host tree %s',
    (tree) => {
      if (!existsSync(tree)) {
        // Absent here: it cannot be mounted, and must not be accepted either.
        expectConfigError(() => resolveMounts([req(tree, '/data')]), 'mount_source_missing');
        return;
      }
      expectConfigError(
        () => resolveMounts([req(tree, '/data', 'ro', 'profile mounts[0]')]),
        'mount_source_forbidden',
        'profile mounts[0]',
        tree,
      );
    },
  );

  it.each(['/etc/passwd', '/proc/self', '/dev/null', '/sys/kernel'].filter((p) => existsSync(p)))(
    'refuses %s, inside a forbidden tree',
    (source) => {
      expectConfigError(() => resolveMounts([req(source, '/data')]), 'mount_source_forbidden');
    },
  );

  it('refuses the host root', () => {
    expectConfigError(() => resolveMounts([req('/', '/data')]), 'mount_source_forbidden', 'root');
  });

  it('refuses a symlink in a harmless place that points at /etc', async () => {
    const link = path.join(dir(), 'innocent');
    await symlink('/etc', link);
    expectConfigError(
      () => resolveMounts([req(link, '/data')]),
      'mount_source_forbidden',
      link,
      "resolves to '/etc'",
    );
  });

  it('refuses a chain of symlinks that ends inside /etc', async () => {
    const first = path.join(dir(), 'first');
    const second = path.join(dir(), 'second');
    // Dangling when /etc/ssl is absent: then missing, never accepted.
    await symlink('/etc/ssl', second);
    await symlink(second, first);
    const expected = existsSync('/etc/ssl') ? 'mount_source_forbidden' : 'mount_source_missing';
    expectConfigError(() => resolveMounts([req(first, '/data')]), expected);
  });

  it.runIf(existsSync('/var/run/docker.sock'))('refuses the docker socket', () => {
    expectConfigError(
      () => resolveMounts([req('/var/run/docker.sock', '/var/docker.sock')]),
      'mount_source_forbidden',
      '/var/run/docker.sock',
    );
  });

  it.runIf(existsSync('/var/run/docker.sock'))(
    'refuses a symlink in a temp dir that points at the docker socket',
    async () => {
      const link = path.join(dir(), 'sock');
      await symlink('/var/run/docker.sock', link);
      expectConfigError(() => resolveMounts([req(link, '/sock')]), 'mount_source_forbidden');
    },
  );

  it('refuses any unix socket, wherever it lives', async () => {
    const socketPath = path.join(dir(), 'engine.sock');
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, resolve);
    });
    try {
      expectConfigError(
        () => resolveMounts([req(socketPath, '/engine.sock')]),
        'mount_source_forbidden',
        'socket',
      );
    } finally {
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    }
  });

  it('refuses a missing source, naming the origin and the path', () => {
    const missing = path.join(dir(), 'nope');
    const error = expectConfigError(
      () => resolveMounts([req(missing, '/data', 'ro', '--mount[3]')]),
      'mount_source_missing',
      '--mount[3]',
      missing,
    );
    expect(error.details).toMatchObject({ field: '--mount[3]', value: missing });
  });

  it('accepts ordinary directories, returning realpath sources and dropping the origin', async () => {
    const ws = await subdir('ws');
    const data = await subdir('data');
    const { mounts } = resolveMounts([
      req(ws, '/workspace', 'ro', '--workspace'),
      req(data, '/data', 'rw', '--mount[0]'),
    ]);
    expect(mounts.every((m) => /^\d+$/.test(m.identity?.ino ?? ''))).toBe(true);
    expect(mounts).toMatchObject([
      { source: ws, target: '/workspace', mode: 'ro' },
      { source: data, target: '/data', mode: 'rw' },
    ]);
  });
});

describe('resolveMounts: symlinks another host user could replace (AH-CONT-1)', () => {
  // Whoever may replace a symlink on the source's name chooses what is mounted: the name
  // would be theirs, not the operator's. Refused under every runtime; the gate could only
  // confirm that the engine mounted the object the link pointed at when cfh looked.
  const OTHER = 4321;
  const isRoot = process.getuid?.() === 0;

  async function target(): Promise<string> {
    const t = await subdir('private');
    await writeFile(path.join(t, 'secret'), 'not for the sandbox\n');
    return t;
  }

  it.runIf(isRoot)('a symlink in a directory another user may write', async () => {
    const theirs = await subdir('theirs');
    await chown(theirs, OTHER, OTHER);
    const link = path.join(theirs, 'data');
    await symlink(await target(), link);
    expectConfigError(
      () => resolveMounts([req(link, '/data')]),
      'mount_source_link',
      `symbolic link '${link}'`,
      `uid ${OTHER} may write '${theirs}'`,
    );
  });

  it.runIf(isRoot)('a symlink another user planted in a sticky directory', async () => {
    const shared = await subdir('shared');
    await chmod(shared, 0o1777);
    const link = path.join(shared, 'data');
    await symlink(await target(), link);
    await lchown(link, OTHER, OTHER);
    expectConfigError(() => resolveMounts([req(link, '/data')]), 'mount_source_link', link);
  });

  it.runIf(isRoot)('a link on the way, not the last component', async () => {
    const theirs = await subdir('theirs-mid');
    await chown(theirs, OTHER, OTHER);
    const t = await target();
    await symlink(path.dirname(t), path.join(theirs, 'up'));
    expectConfigError(
      () => resolveMounts([req(path.join(theirs, 'up', 'private'), '/data')]),
      'mount_source_link',
      path.join(theirs, 'up'),
    );
  });

  it.runIf(isRoot)('a symlink in a directory another user owns, read-only or not', async () => {
    // The owner may chmod it back at will: mode 0555 protects nothing from them.
    const theirs = await subdir('theirs-ro');
    const link = path.join(theirs, 'data');
    await symlink(await target(), link);
    await chown(theirs, OTHER, OTHER);
    await chmod(theirs, 0o555);
    expectConfigError(
      () => resolveMounts([req(link, '/data')]),
      'mount_source_link',
      `uid ${OTHER} may write '${theirs}'`,
    );
  });

  it.runIf(isRoot)(
    'a link judged as it led to the object, not as a second look finds it',
    async () => {
      // In a sticky directory, another user's link, swapped right after the resolution for
      // a hard link of a root-owned file, would pass a second look: the walk's record decides.
      const shared = await subdir('sticky-judged');
      await chmod(shared, 0o1777);
      const entry = path.join(shared, 'data');
      await writeFile(entry, 'root-owned now');
      const seen = new Map([[entry, { uid: OTHER, gid: OTHER, mode: 0o120777 }]]);
      expect(swapperOf(entry, 0, seen)).toEqual({ directory: shared, who: `uid ${OTHER}` });
      expect(swapperOf(entry, 0)).toBeUndefined();
    },
  );

  it('the workspace must resolve to a directory, judged on the object mounted', async () => {
    const file = path.join(dir(), 'not-a-dir');
    await writeFile(file, 'x');
    expectConfigError(
      () => resolveMounts([req(file, '/workspace', 'ro', '--workspace')]),
      'workspace_not_directory',
      '--workspace',
    );
    // Elsewhere a regular file is a fine source.
    expect(resolveMounts([req(file, '/data')]).mounts[0]?.source).toBe(file);
  });

  it('a FIFO is neither a directory nor a file: refused', () => {
    const fifo = path.join(dir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    expectConfigError(() => resolveMounts([req(fifo, '/data')]), 'mount_source_forbidden', 'FIFO');
  });

  it('a source whose name is not UTF-8 is refused as such, not as a change', () => {
    const latin1 = Buffer.concat([Buffer.from(`${dir()}/lat`), Buffer.from([0xe9])]);
    mkdirSync(latin1);
    const link = path.join(dir(), 'to-latin1');
    symlinkSync(latin1, link);
    expectConfigError(() => resolveMounts([req(link, '/data')]), 'mount_source_invalid', 'UTF-8');
  });
});

describe('resolveMounts: no link a sandbox could have made is followed (AH-CONT-1)', () => {
  // A sandbox given an rw directory writes as a non-root uid, often cfh's own: a link it
  // left there (`cache -> ~/.ssh`) would choose what a later run mounts. So a source is
  // resolved through no symlink except one only root could have made (a root-owned link in
  // directories only root may write: `/bin -> usr/bin`), whoever could replace it now.
  const isRoot = process.getuid?.() === 0;

  async function secret(): Promise<string> {
    const t = await subdir('secret');
    await writeFile(path.join(t, 'id_rsa'), 'not for the sandbox\n');
    return t;
  }

  it("a link in cfh's own directory, as a previous sandbox would leave it", async () => {
    const ws = await subdir('ws');
    const t = await secret();
    await symlink(t, path.join(ws, 'cache'));
    expectConfigError(
      () => resolveMounts([req(path.join(ws, 'cache'), '/cache', 'rw', '--mount[0]')]),
      'mount_source_link',
      '--mount[0]',
      `symbolic link '${path.join(ws, 'cache')}' (to '${t}')`,
    );
  });

  it('the workspace named through such a link', async () => {
    const ws = await subdir('ws');
    await mkdir(path.join(ws, 'real-sub'));
    await symlink('real-sub', path.join(ws, 'sub'));
    expectConfigError(
      () => resolveMounts([req(path.join(ws, 'sub'), '/workspace', 'rw', '--workspace')]),
      'mount_source_link',
      '--workspace',
      path.join(ws, 'sub'),
    );
  });

  it('a link in an intermediate component, not the last', async () => {
    const ws = await subdir('ws');
    const t = await secret();
    await symlink(path.dirname(t), path.join(ws, 'up'));
    expectConfigError(
      () => resolveMounts([req(path.join(ws, 'up', 'secret'), '/data')]),
      'mount_source_link',
      path.join(ws, 'up'),
    );
  });

  it('a link to a file', async () => {
    const ws = await subdir('ws');
    const t = await secret();
    await symlink(path.join(t, 'id_rsa'), path.join(ws, 'config.json'));
    expectConfigError(
      () => resolveMounts([req(path.join(ws, 'config.json'), '/config.json')]),
      'mount_source_link',
      path.join(ws, 'config.json'),
    );
  });

  it('`..` after a link, spelled by hand: the kernel would leave the target', async () => {
    const ws = await subdir('ws');
    const t = await secret();
    await mkdir(path.join(t, 'inner'));
    await symlink(path.join(t, 'inner'), path.join(ws, 'hop'));
    expectConfigError(
      () => resolveMounts([req(`${ws}/hop/..`, '/data')]),
      'mount_source_link',
      path.join(ws, 'hop'),
    );
  });

  it.runIf(isRoot)('a root-owned link in a directory the sandbox uid owns', async () => {
    // Mode 0755 and a root-owned link do not help: the directory's owner may rename entries.
    const theirs = await subdir('theirs-link');
    const t = await secret();
    await symlink(t, path.join(theirs, 'data'));
    await chown(theirs, 4321, 4321);
    expectConfigError(
      () => resolveMounts([req(path.join(theirs, 'data'), '/data')]),
      'mount_source_link',
      `uid 4321 may write '${theirs}'`,
    );
  });

  it('a link in a sticky directory, whoever owns it', async () => {
    const shared = await subdir('shared-mine');
    await chmod(shared, 0o1777);
    const t = await secret();
    await symlink(t, path.join(shared, 'data'));
    expectConfigError(
      () => resolveMounts([req(path.join(shared, 'data'), '/data')]),
      'mount_source_link',
      `anyone may write '${shared}'`,
    );
  });

  it.runIf(existsSync('/bin/sh') && lstatSync('/bin').isSymbolicLink())(
    'system links only root could have made are followed: /bin -> usr/bin, sh -> dash',
    () => {
      const [m] = resolveMounts([req('/bin/sh', '/opt/sh')]).mounts;
      expect(m?.source).toBe(realpathSync('/bin/sh'));
    },
  );
});

describe('resolveMounts: targets', () => {
  it('refuses a relative target', async () => {
    const src = await subdir('a');
    expectConfigError(
      () => resolveMounts([req(src, 'data', 'ro', '--mount[1]')]),
      'mount_target_relative',
      '--mount[1]',
      "'data'",
    );
  });

  it.each(['/data/../etc', '/data//sub', '/data/./sub'])(
    'refuses the non-normalized target %s',
    async (target) => {
      const src = await subdir('a');
      expectConfigError(() => resolveMounts([req(src, target)]), 'mount_target_invalid', target);
    },
  );

  it('refuses a duplicate target, naming the earlier mount', async () => {
    const a = await subdir('a');
    const b = await subdir('b');
    expectConfigError(
      () =>
        resolveMounts([
          req(a, '/data', 'ro', 'profile mounts[0]'),
          req(b, '/data', 'ro', '--mount[0]'),
        ]),
      'mount_target_duplicate',
      '--mount[0]',
      'profile mounts[0]',
    );
  });

  it('treats a trailing slash as the same target', async () => {
    const a = await subdir('a');
    const b = await subdir('b');
    expectConfigError(
      () => resolveMounts([req(a, '/data'), req(b, '/data/')]),
      'mount_target_duplicate',
    );
  });

  it('refuses nested targets in either order', async () => {
    const a = await subdir('a');
    const b = await subdir('b');
    expectConfigError(
      () => resolveMounts([req(a, '/data'), req(b, '/data/sub')]),
      'mount_target_nested',
      '/data/sub',
    );
    expectConfigError(
      () => resolveMounts([req(b, '/data/sub'), req(a, '/data')]),
      'mount_target_nested',
    );
  });

  it('refuses a mount nested inside the workspace', async () => {
    const ws = await subdir('ws');
    const a = await subdir('a');
    expectConfigError(
      () => resolveMounts([req(ws, '/workspace', 'ro', '--workspace'), req(a, '/workspace/sub')]),
      'mount_target_nested',
      '--workspace',
    );
  });

  it('accepts targets that only share a name prefix', async () => {
    const a = await subdir('a');
    const b = await subdir('b');
    expect(
      resolveMounts([req(a, '/data'), req(b, '/database')]).mounts.map((m) => m.target),
    ).toEqual(['/data', '/database']);
  });

  it('refuses the container root as a target', async () => {
    const src = await subdir('a');
    // Refused before the reserved check (as not normalized); either way, never mounted.
    const error = expectConfigError(() => resolveMounts([req(src, '/')]), 'mount_target_invalid');
    expect(error.details).toMatchObject({ value: '/' });
  });

  it.each([
    '/tmp',
    '/tmp/x',
    '/proc',
    '/proc/x',
    '/sys/fs',
    '/dev',
    '/dev/shm',
    '/etc',
    '/etc/ssl',
    '/usr',
    '/usr/local/bin',
    '/usr/lib/python3.11',
    '/bin',
    '/sbin',
    '/lib',
    '/lib64',
  ])('refuses the reserved target %s', async (target) => {
    const src = await subdir('a');
    expectConfigError(() => resolveMounts([req(src, target)]), 'mount_target_reserved', target);
  });
});

describe('parseMountFlag', () => {
  it('reads SRC:DST as read-only with an absolute source', () => {
    expect(parseMountFlag('rel/src:/dst', 0)).toEqual({
      source: path.resolve('rel/src'),
      target: '/dst',
      mode: 'ro',
      origin: '--mount[0]',
    });
  });

  it('reads an explicit mode', () => {
    expect(parseMountFlag('/a:/b:rw', 2)).toEqual({
      source: '/a',
      target: '/b',
      mode: 'rw',
      origin: '--mount[2]',
    });
    expect(parseMountFlag('/a:/b:ro', 1).mode).toBe('ro');
  });

  it('refuses a mode other than ro or rw', () => {
    expectConfigError(
      () => parseMountFlag('/a:/b:rx', 4),
      'mount_flag_invalid',
      '--mount[4]',
      "'rx'",
    );
    expectConfigError(() => parseMountFlag('/a:/b:', 0), 'mount_flag_invalid');
  });

  it.each(['/a:/b:ro:extra', '/a', '', ':/b', '/a:', '/a::ro'])('refuses %j', (value) => {
    expectConfigError(() => parseMountFlag(value, 0), 'mount_flag_invalid', '--mount[0]');
  });
});

describe('checkArtifactRoot', () => {
  function wsMount(source: string): SpecMount[] {
    return [{ source, target: '/workspace', mode: 'ro' }];
  }

  it('refuses an artifact root inside a mount source', () => {
    const ws = path.join(dir(), 'ws');
    const error = expectConfigError(
      () => {
        checkArtifactRoot(path.join(ws, 'runs'), wsMount(ws));
      },
      'artifact_root_exposed',
      path.join(ws, 'runs'),
      ws,
    );
    expect(error.details).toMatchObject({ field: 'artifactRoot' });
  });

  it('refuses an artifact root equal to a mount source', () => {
    const ws = path.join(dir(), 'ws');
    expectConfigError(() => {
      checkArtifactRoot(ws, wsMount(ws));
    }, 'artifact_root_exposed');
  });

  it('refuses a mount source inside the artifact root', () => {
    const root = path.join(dir(), 'runs');
    expectConfigError(
      () => {
        checkArtifactRoot(root, [
          { source: path.join(dir(), 'ws'), target: '/workspace', mode: 'ro' },
          { source: path.join(root, 'old-run'), target: '/data', mode: 'ro' },
        ]);
      },
      'artifact_root_exposed',
      '/data',
    );
  });

  it('accepts a disjoint artifact root, including one that only shares a name prefix', () => {
    const ws = path.join(dir(), 'ws');
    expect(() => {
      checkArtifactRoot(path.join(dir(), 'runs'), wsMount(ws));
    }).not.toThrow();
    expect(() => {
      checkArtifactRoot(`${ws}-runs`, wsMount(ws));
    }).not.toThrow();
  });

  // A directory whose name merely starts with '..' is still inside its parent.
  it('refuses an artifact root inside the workspace whose name starts with ".."', () => {
    const ws = path.join(dir(), 'ws');
    expectConfigError(() => {
      checkArtifactRoot(path.join(ws, '..runs'), wsMount(ws));
    }, 'artifact_root_exposed');
  });
});

describe('isWithin', () => {
  it('is true for the path itself and its descendants', () => {
    expect(isWithin('/a', '/a')).toBe(true);
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/a/b/c', '/a')).toBe(true);
  });

  it('is false for siblings, prefixes and ancestors', () => {
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/', '/a')).toBe(false);
    expect(isWithin('/b/a', '/a')).toBe(false);
  });

  it('is true for a child whose name starts with ".."', () => {
    expect(isWithin('/a/..b', '/a')).toBe(true);
    expect(isWithin('/etc/..data', '/etc')).toBe(true);
  });
});

describe('the operator key directory stays out of every mount', () => {
  const mountOf = (source: string): SpecMount => ({ source, target: '/workspace', mode: 'ro' });

  it('is refused inside a mount once a key is in it, the credential-digest key included', async () => {
    const ws = path.join(dir(), 'home');
    const keys = path.join(ws, '.config', 'cfh', 'keys');
    await mkdir(keys, { recursive: true });
    const art = path.join(dir(), 'runs');
    // No key yet, and the run makes none: a workspace of $HOME stays usable.
    expect(() => {
      checkSigningKey(keys, art, [mountOf(ws)]);
    }).not.toThrow();
    // A run with host-tool credentials makes the digest key there: refused before it exists.
    expectConfigError(
      () => {
        checkSigningKey(keys, art, [mountOf(ws)], true);
      },
      'signing_key_exposed',
      'would be readable in the sandbox',
    );
    // The digest key alone (host tools ran here before, no `cfh keys init`): refused too.
    await writeFile(path.join(keys, 'credential-digest.key'), 'ab'.repeat(32));
    expectConfigError(
      () => {
        checkSigningKey(keys, art, [mountOf(ws)]);
      },
      'signing_key_exposed',
      'would be readable in the sandbox',
    );
    // A mount elsewhere is fine.
    expect(() => {
      checkSigningKey(keys, art, [mountOf(path.join(dir(), 'other'))]);
    }).not.toThrow();
  });
});
