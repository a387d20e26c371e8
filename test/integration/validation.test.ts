// Issue 2, section 5 (AH-INV-4, AH-CONT-1/2): every invalid configuration fails with one
// clear line naming the field and the value, exit 125, and no engine object created.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chown, mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createServer, type Socket } from 'node:net';
import { cfh, objectsOwnedBy, removeDir, startCfh, tempDir } from './helpers.js';
import { REFUSAL_DEADLINE_MS, expectOneLineRefusal, refusal } from './refusal.js';

let scratch: string;
let workspace: string;
let artifactRoot: string;

beforeAll(async () => {
  scratch = await tempDir('invalid');
  workspace = path.join(scratch, 'ws');
  artifactRoot = path.join(scratch, 'art');
  await mkdir(workspace);
  await mkdir(path.join(workspace, 'sub'));
  await symlink('/etc', path.join(scratch, 'etc-link'));
  await symlink('/var/run/docker.sock', path.join(scratch, 'sock-link'));
  await writeFile(
    path.join(scratch, 'unknown-key.yaml'),
    'extends: default\nname: bad\nlimits:\n  memroy: 1g\n',
  );
  await writeFile(
    path.join(scratch, 'missing-image.yaml'),
    'extends: default\nname: noimage\nimage: cfh-no-such-image:never\n',
  );
  await writeFile(
    path.join(scratch, 'bad-size.yaml'),
    'extends: default\nname: badsize\nlimits:\n  memory: lots\n',
  );
  await writeFile(
    path.join(scratch, 'unknown-syscall.yaml'),
    'extends: default\nname: sc1\nseccomp:\n  allow: [open_the_pod_bay_doors]\n',
  );
  await writeFile(
    path.join(scratch, 'contradiction.yaml'),
    'extends: default\nname: sc2\nseccomp:\n  allowPtrace: false\n  allow: [ptrace]\n',
  );
  await writeFile(
    path.join(scratch, 'many-cpus.yaml'),
    'extends: default\nname: cpus\nlimits:\n  cpus: 1000\n',
  );
  await writeFile(
    path.join(scratch, 'tiny-tmpfs.yaml'),
    'extends: default\nname: tmpfs\nlimits:\n  tmpfs: 1k\n',
  );
  await writeFile(
    path.join(scratch, 'tiny-memory.yaml'),
    'extends: default\nname: mem\nlimits:\n  memory: 4194304b\n',
  );
  await writeFile(
    path.join(scratch, 'allowlist.yaml'),
    'extends: default\nname: net\nnetwork:\n  mode: allowlist\n  allow: [localhost]\n  deny: [10.0.0.0/99]\n',
  );
});
afterAll(async () => {
  await removeDir(scratch);
});

const cases: [string, () => string[], RegExp, Record<string, string>?][] = [
  [
    'missing mount source',
    () => ['--mount', `${scratch}/nope:/data`],
    /--mount\[0\]: source '.*nope' does not exist/,
  ],
  [
    '/etc as mount source',
    () => ['--mount', '/etc:/data'],
    /--mount\[0\]: source '\/etc' .*inside \/etc/,
  ],
  ['/proc as mount source', () => ['--mount', '/proc/self:/data'], /--mount\[0\].*inside \/proc/],
  [
    'a symlink to /etc',
    () => ['--mount', `${scratch}/etc-link:/data`],
    /--mount\[0\]: source '.*etc-link' resolves to '\/etc'/,
  ],
  [
    'the engine socket through a symlink',
    () => ['--mount', `${scratch}/sock-link:/data`],
    /--mount\[0\].*(inside \/run|socket)/,
  ],
  ['a workspace under /etc', () => ['--workspace', '/etc/apt'], /--workspace.*inside \/etc/],
  [
    'duplicate targets',
    () => ['--mount', `${scratch}:/data`, '--mount', `${workspace}:/data`],
    /--mount\[1\]: target '\/data' is already mounted by --mount\[0\]/,
  ],
  [
    'nested targets',
    () => ['--mount', `${scratch}:/data`, '--mount', `${workspace}:/data/sub`],
    /--mount\[1\]: target '\/data\/sub' nests with '\/data'/,
  ],
  [
    'a target under /workspace',
    () => ['--mount', `${scratch}/ws/sub:/workspace/sub`],
    /nests with '\/workspace'/,
  ],
  [
    'a relative target',
    () => ['--mount', `${scratch}:data`],
    /--mount\[0\]: target 'data' is not an absolute path/,
  ],
  ['a bad mount mode', () => ['--mount', `${scratch}:/data:rx`], /--mount\[0\]: mode 'rx'/],
  [
    'an unknown profile',
    () => ['--profile', 'no-such-profile'],
    /^cfh: profile 'no-such-profile' not found; the built-in profiles are default/,
  ],
  [
    'an unknown profile key',
    () => ['--profile', `${scratch}/unknown-key.yaml`],
    /unknown-key\.yaml:4:3: unknown key 'memroy' in limits; did you mean 'memory'\?\n$/,
  ],
  [
    'a malformed size in a profile',
    () => ['--profile', `${scratch}/bad-size.yaml`],
    /limits\.memory: is not a size/,
  ],
  ['a malformed --memory', () => ['--memory', '12x'], /--memory: '12x' is not a size/],
  ['a malformed --cpus', () => ['--cpus', 'abc'], /--cpus: 'abc' is not a positive number/],
  ['a negative --timeout', () => ['--timeout', '-1'], /--timeout/],
  // Limits the engine or kernel would refuse only after the run directory existed.
  [
    '--memory below the engine minimum',
    () => ['--memory', '1k'],
    /^cfh: --memory: '1k' is below the engine's minimum memory limit of 6 MiB/,
  ],
  ['--memory just below 6 MiB', () => ['--memory', '5m'], /--memory: '5m' is below/],
  [
    'a profile memory below the engine minimum',
    () => ['--profile', `${scratch}/tiny-memory.yaml`],
    /limits\.memory: '4194304b' is below the engine's minimum/,
  ],
  ['--cpus below 0.01', () => ['--cpus', '0.001'], /--cpus: '0\.001' is below 0\.01 CPU/],
  [
    '--cpus above the host',
    () => ['--cpus', '999'],
    /--cpus: '999' is more than the \d+ CPU\(s\) this host has/,
  ],
  [
    'profile cpus above the host',
    () => ['--profile', `${scratch}/many-cpus.yaml`],
    /limits\.cpus: '1000' is more than the \d+ CPU\(s\)/,
  ],
  [
    'a tmpfs below one page',
    () => ['--profile', `${scratch}/tiny-tmpfs.yaml`],
    /limits\.tmpfs: '1k' is below one 4 KiB page/,
  ],
  ['--pids below 8', () => ['--pids', '1'], /--pids: .*8/],
  ['--pids above a million', () => ['--pids', '2000000'], /--pids: .*1000000/],
  ['a fractional --pids', () => ['--pids', '1.5'], /--pids: '1.5' is not a positive integer/],
  ['an unknown --runtime', () => ['--runtime', 'kata'], /--runtime.*kata/],
  [
    'a missing workspace',
    () => ['--workspace', `${scratch}/absent`],
    /--workspace: '.*absent' does not exist/,
  ],
  [
    'an artifact root inside the workspace',
    () => ['--artifact-root', `${scratch}/ws/evidence`],
    /artifact root '.*ws\/evidence' would be readable in the sandbox/,
  ],
  [
    'a malformed deny destination in a profile',
    () => ['--profile', `${scratch}/allowlist.yaml`],
    /network\.deny\[0\]: '10\.0\.0\.0\/99' has an invalid prefix length/,
  ],
  [
    'a malformed --allow destination',
    () => ['--allow', 'not a host'],
    /network\.allow\[0\]: 'not a host' is not a host name/,
  ],
  [
    'an unknown syscall name',
    () => ['--profile', `${scratch}/unknown-syscall.yaml`],
    /seccomp\.allow: unknown syscall name\(s\) 'open_the_pod_bay_doors'/,
  ],
  [
    'a seccomp grant contradicting another field',
    () => ['--profile', `${scratch}/contradiction.yaml`],
    /seccomp\.allow: ptrace contradicts seccomp\.allowPtrace: false/,
  ],
  [
    'a missing image',
    () => ['--profile', `${scratch}/missing-image.yaml`],
    /^cfh: image cfh-no-such-image:never is not in the engine, and cfh never pulls;/,
  ],
  [
    'an unreachable engine',
    () => [],
    /^cfh: no Docker engine answers at \/nonexistent\/docker\.sock \(ENOENT\); start it/,
    { DOCKER_HOST: `unix:///nonexistent/docker.sock` },
  ],
];

describe('invalid configuration', () => {
  it.each(cases)('%s: exit 125, one line, nothing created', async (name, args, message, env) => {
    // An artifact root of its own, so one case that wrongly ran cannot fail the others.
    const root = path.join(artifactRoot, name.replace(/[^a-z0-9]+/gi, '-'));
    // refusal() also proves no run directory and no engine object of this cfh exist.
    const r = await refusal(
      [
        'sandbox',
        'run',
        '--workspace',
        workspace,
        '--artifact-root',
        root,
        ...args(),
        '--',
        'true',
      ],
      root,
      { env: env ?? {} },
    );
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(message);
    if (!/--runtime/.test(message.source)) expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
  });

  it('a missing command is refused', async () => {
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      workspace,
      '--artifact-root',
      artifactRoot,
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/command/);
  });
});

// An artifact root on a kernel pseudo file system: Node's recursive mkdir spun for ever
// under /proc (mkdir there answers ENOENT), deaf to SIGTERM, and under /sys/fs/cgroup it
// would have made a cgroup. Refused by path and, wherever such a file system is mounted,
// by statfs of the nearest existing ancestor.
describe('artifact root on a pseudo file system', () => {
  const unique = `cfh-test-${process.pid}-${Date.now()}`;
  const refused = async (
    root: string,
    pattern: RegExp,
    under?: readonly string[],
  ): Promise<void> => {
    const r = await refusal(
      ['sandbox', 'run', '--workspace', workspace, '--artifact-root', root, '--', 'true'],
      root,
      under === undefined ? {} : { under },
    );
    expectOneLineRefusal(r, pattern);
  };

  it.each([
    [
      `/proc/${unique}/runs`,
      /artifact root '\/proc\/.*' is inside \/proc; choose another --artifact-root/,
    ],
    [`/sys/fs/cgroup/memory/${unique}`, /is inside \/sys/],
    [`/dev/shm/${unique}`, /is inside \/dev/],
    [`/dev/pts/${unique}`, /is inside \/dev/],
  ])('%s: exit 125 at once, nothing created', async (root, pattern) => {
    await refused(root, pattern);
  });

  it('a symlink into /proc is resolved and refused', async () => {
    const link = path.join(scratch, 'to-proc');
    await symlink('/proc', link);
    await refused(path.join(link, unique), /resolves to '\/proc\/cfh-test-.*', inside \/proc/);
  });

  it('a dangling symlink (into /proc) is refused, not followed into a failure after preflight', async () => {
    const link = path.join(scratch, 'dangling-into-proc');
    await symlink(`/proc/${unique}/runs`, link);
    await refused(
      link,
      /goes through '.*dangling-into-proc', a symbolic link to '\/proc\/cfh-test-.*', which does not exist/,
    );
    await refused(path.join(link, 'sub'), /goes through '.*dangling-into-proc', a symbolic link/);
  });

  it('procfs mounted anywhere else is found by statfs', async () => {
    // In a private mount namespace of cfh's own, so the mount ends with the process.
    const mnt = path.join(scratch, 'procfs-here');
    await mkdir(mnt);
    await refused(
      path.join(mnt, unique),
      /is on the kernel's proc file system \(at '.*procfs-here'\)/,
      [
        'unshare',
        '-m',
        '--propagation',
        'private',
        'sh',
        '-c',
        `mount -t proc proc '${mnt}' && exec "$@"`,
        'sh',
      ],
    );
  });
});

// cfh writes the evidence with its own authority (root, here): an artifact root another host
// user could change entries of, or reach through their link, would take those writes
// wherever they chose. Refused at planning, before anything is written.
describe('artifact root another host user could change', () => {
  it.runIf(process.getuid?.() === 0)(
    'their directory, their link, or their directory above it: exit 125, nothing created',
    async () => {
      const theirs = path.join(scratch, 'theirs-art');
      await mkdir(path.join(theirs, 'runs'), { recursive: true });
      const mine = path.join(scratch, 'my-runs');
      await mkdir(mine);
      await symlink(mine, path.join(theirs, 'link'));
      await chown(theirs, 4321, 4321);
      for (const root of ['runs', 'link', 'new/runs'].map((p) => path.join(theirs, p))) {
        const r = await cfh([
          'sandbox',
          'run',
          '--workspace',
          workspace,
          '--artifact-root',
          root,
          '--',
          'true',
        ]);
        expectOneLineRefusal(
          r,
          // Their link is refused as any link is that a non-root uid could have made.
          /artifact root '.*theirs-art\/.*'(: uid 4321 could replace entries of '.*theirs-art'| goes through the symbolic link '.*theirs-art\/link' .*\(uid 4321 may write '.*theirs-art', on its way\))/,
        );
        expect(await objectsOwnedBy(r.pid)).toEqual([]);
      }
      // Nothing written anywhere: not in their directory, not through their link.
      expect((await readdir(theirs)).sort()).toEqual(['link', 'runs']);
      expect(await readdir(path.join(theirs, 'runs'))).toEqual([]);
      expect(await readdir(mine)).toEqual([]);
    },
  );
});

describe('an engine that accepts and never answers', () => {
  it('cfh waits, and SIGTERM ends it promptly with 143 (it used to stay alive after reporting)', async () => {
    const socket = path.join(scratch, 'silent-engine.sock');
    const held: Socket[] = [];
    const server = createServer((c) => held.push(c));
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const root = path.join(scratch, 'art-silent');
    const child = startCfh(
      ['sandbox', 'run', '--workspace', workspace, '--artifact-root', root, '--', 'true'],
      { env: { DOCKER_HOST: `unix://${socket}` } },
    );
    try {
      // cfh is waiting on the engine once it has connected (its signal handlers are set by
      // then): wait for that, not for a fixed time, which a loaded machine's start-up outruns.
      const connectedBy = Date.now() + 60_000;
      while (held.length === 0 && Date.now() < connectedBy)
        await new Promise((r) => setTimeout(r, 50));
      expect(held.length, 'cfh never asked the engine anything').toBeGreaterThan(0);
      const sent = Date.now();
      child.kill('SIGTERM');
      const result = await Promise.race([
        child,
        new Promise<undefined>((r) => {
          setTimeout(() => {
            r(undefined);
          }, REFUSAL_DEADLINE_MS);
        }),
      ]);
      expect(result, 'cfh was still running after SIGTERM').toBeDefined();
      expect(result?.exitCode, result?.stderr).toBe(143);
      expect(result?.stderr).toMatch(/^cfh: cancelled:SIGTERM before the run started$/m);
      expect(Date.now() - sent).toBeLessThan(REFUSAL_DEADLINE_MS);
      await expect(readdir(root)).rejects.toThrow();
    } finally {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      for (const c of held) c.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
