// Adversarial: every container of a run mounts exactly the objects cfh checked (AH-CONT-1),
// however long after planning it is created, and the engine socket is unreachable through
// any mount. Attacks: a mount source inside the rw workspace (the sandbox could replace
// it), a source replaced by a host process between two tool containers, a loop of swaps by
// another host user racing cfh's check, a gate that sees another object than the one
// checked, and a hard link or a bind of the engine socket inside a mounted directory.
// Under runc and, where registered, runsc.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import {
  chmod,
  chown,
  link,
  mkdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  SANDBOX_UID,
  agentRunArgs,
  cfh,
  copySampleRepo,
  docker,
  objectsOwnedBy,
  onlyRunDir,
  readEvents,
  readJson,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';
import { expectOneLineRefusal, refusal } from './refusal.js';
import { deriveContainerSpec } from '../../src/sandbox/derive-spec.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { loadRecipe } from '../../src/image/recipe.js';
import { toCreateOptions } from '../../src/substrate/docker/request.js';
import { DockerCreatedContainer } from '../../src/substrate/docker/container.js';
import { ContainmentError } from '../../src/errors.js';

const scratch = useScratch('mounts');
let runtimes: string[] = ['runc'];
let n = 0;

beforeAll(async () => {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  if (Object.keys(info.Runtimes ?? {}).includes('runsc')) runtimes = ['runc', 'runsc'];
  else console.log('runsc is not registered with this engine: runc only');
});

function engineSocket(): string {
  const host = process.env.DOCKER_HOST ?? '';
  return host.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock';
}

/** A directory with one marker file, owned by the sandbox user so it may read it. */
async function markedDir(name: string): Promise<string> {
  const dir = scratch.path(name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'marker'), 'checked object\n');
  await chown(dir, SANDBOX_UID, SANDBOX_UID);
  await chown(path.join(dir, 'marker'), SANDBOX_UID, SANDBOX_UID);
  return dir;
}

describe.each(['runc', 'runsc'])('mount containment under %s', (runtime) => {
  const skip = (ctx: { skip(note?: string): void }): void => {
    if (!runtimes.includes(runtime)) ctx.skip(`${runtime} is not registered`);
  };

  it('refuses a mount source inside the rw workspace before anything exists', async (ctx) => {
    skip(ctx);
    const repo = await copySampleRepo(scratch.path(`nested-${runtime}`));
    await mkdir(path.join(repo, 'sub'));
    const art = scratch.path(`art-nested-${runtime}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--runtime',
      runtime,
      '--workspace',
      repo,
      '--mount',
      `${path.join(repo, 'sub')}:/data:ro`,
      '--artifact-root',
      art,
      '--',
      'true',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/lies inside .* mounted rw/);
    expect(await objectsOwnedBy(r.pid)).toEqual([]);
    expect(existsSync(art)).toBe(false);
  });

  it('a mount or workspace named through a symlink another host user could replace is refused before anything exists', async (ctx) => {
    skip(ctx);
    // The other user's directory holds links to objects of the operator's: whoever may
    // replace the link chooses what is mounted, so the name is not the operator's.
    const theirs = scratch.path(`theirs-${runtime}`);
    await mkdir(theirs);
    await chown(theirs, SANDBOX_UID, SANDBOX_UID);
    await chmod(path.dirname(theirs), 0o755);
    const repo = await copySampleRepo(scratch.path(`linked-repo-${runtime}`));
    const data = await markedDir(`linked-data-${runtime}`);
    await symlink(repo, path.join(theirs, 'repo'));
    await symlink(data, path.join(theirs, 'data'));
    for (const [flag, value, link] of [
      ['--mount', `${path.join(theirs, 'data')}:/data:ro`, path.join(theirs, 'data')],
      ['--workspace', path.join(theirs, 'repo'), path.join(theirs, 'repo')],
    ] as const) {
      const art = scratch.path(`art-linked-${runtime}-${n++}`);
      const r = await cfh([
        'sandbox',
        'run',
        '--runtime',
        runtime,
        ...(flag === '--mount' ? ['--workspace', repo] : []),
        flag,
        value,
        '--artifact-root',
        art,
        '--',
        'cat',
        '/data/marker',
      ]);
      expect(r.exitCode, r.stderr).toBe(125);
      expect(r.stderr).toContain(
        `the symbolic link '${link}' (to '${link.endsWith('repo') ? repo : data}'), which is not root's alone (uid ${SANDBOX_UID} may write '${theirs}'`,
      );
      expect(r.stdout).toBe('');
      expect(await objectsOwnedBy(r.pid)).toEqual([]);
      expect(existsSync(art)).toBe(false);
    }
  });

  // pool.size 0: the second container is created after the swap (the create's re-check
  // refuses it). pool.size 1: it was made and gated before the swap, waiting in the warm
  // pool (issue 21); the take's re-check refuses it all the same, before the call runs.
  it.for([0, 1])(
    'a source replaced by a host process between two tool containers fails the run, never mounts it (pool.size %i)',
    async (size, ctx) => {
      skip(ctx);
      const repo = await copySampleRepo(scratch.path(`swap-repo-${runtime}-${size}`));
      const data = await markedDir(`swap-data-${runtime}-${size}`);
      const profile = await scratch.file(
        `swap-profile-${runtime}-${size}.yaml`,
        `extends: untrusted-repo\nname: swap\ntools: [exec]\npool:\n  size: ${size}\n`,
      );
      const script = await scratch.file(
        `swap-${runtime}-${size}.yaml`,
        JSON.stringify({
          turns: [
            { tool_calls: [{ name: 'exec', input: { command: ['sleep', '3'] } }] },
            { tool_calls: [{ name: 'exec', input: { command: ['ls', '-a', '/data'] } }] },
            { text: 'done' },
          ],
        }),
      );
      const art = scratch.path(`art-swap-${runtime}-${size}`);
      const child = startCfh(
        agentRunArgs({ workspace: repo, artifactRoot: art, profile, script }, [
          '--tool-lifetime',
          'per-call',
          '--runtime',
          runtime,
          '--mount',
          `${data}:/data:ro`,
        ]),
      );
      try {
        if (size === 0) await waitForEvent(art, 'tool_container_started');
        else {
          // The first call is in hand and its refill is ready in the pool.
          const dir = await waitForEvent(art, 'tool_container_taken');
          for (let i = 0; i < 100; i++) {
            const pooled = (await readEvents(dir)).filter(
              (e) => e.type === 'tool_container_pooled',
            );
            if (pooled.length >= 2) break;
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        // The first call sleeps; meanwhile the source becomes a symlink to the host's root.
        await rename(data, `${data}.moved`);
        await symlink('/', data);
        const r = await child;
        expect(r.exitCode, r.stderr).toBe(1);
        const dir = await onlyRunDir(art);
        const report = await readJson<any>(path.join(dir, 'report.json'));
        expect(report.error).toMatchObject({ code: 'mount_source_changed', boundary: 'sandbox' });
        const events = await readEvents(dir);
        expect(events.find((e) => e.type === 'containment_failure')?.data).toMatchObject({
          code: 'mount_source_changed',
          details: { source: data, target: '/data' },
        });
        // The second call never ran: no output of it, and the model heard nothing of why.
        expect(events.filter((e) => e.type === 'tool_executed')).toHaveLength(1);
        expect(existsSync(path.join(dir, 'outputs', 'call-0002.stdout'))).toBe(false);
        if (size === 1) {
          // A warm container made before the swap was there for it, and was not handed out.
          const of = (t: string) => events.filter((e) => e.type === t);
          expect(of('tool_container_pooled').length).toBeGreaterThanOrEqual(2);
          expect(of('tool_container_taken')).toHaveLength(1);
          const removed = new Set(of('tool_container_removed').map((e) => e.data.containerId));
          for (const e of of('tool_container_started'))
            expect(removed).toContain(e.data.containerId);
        }
        const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
        expect(transcript).not.toContain('mount_source_changed');
        expect(transcript).not.toMatch(/\bboot\b.*\betc\b/s);
      } finally {
        child.kill('SIGKILL');
        await rm(data, { force: true });
        if (existsSync(`${data}.moved`)) await rename(`${data}.moved`, data);
      }
    },
  );

  it('a loop of swaps by another host user: every run mounts the checked object or is refused', async (ctx) => {
    skip(ctx);
    const ws = await copySampleRepo(scratch.path(`race-ws-${runtime}`));
    // The parent belongs to another user (the sandbox uid here), who may rename in it.
    const parent = scratch.path(`race-${runtime}`);
    await mkdir(parent);
    await chown(parent, SANDBOX_UID, SANDBOX_UID);
    const data = path.join(parent, 'data');
    await mkdir(data);
    await writeFile(path.join(data, 'marker'), 'checked object\n');
    await chown(data, SANDBOX_UID, SANDBOX_UID);
    // Swaps data for a symlink to /etc and back, as fast as it can, as that user.
    // The other user must reach its directory: open this file's scratch to traversal.
    await chmod(path.dirname(parent), 0o755);
    const swapper = execa(
      'setpriv',
      [
        `--reuid=${SANDBOX_UID}`,
        `--regid=${SANDBOX_UID}`,
        '--clear-groups',
        '/usr/bin/python3',
        '-c',
        "import os,sys,time\nd=sys.argv[1]\nfirst=True\nwhile True:\n  os.rename(d, d+'.real'); os.symlink('/etc', d); time.sleep(0.002)\n  os.unlink(d); os.rename(d+'.real', d); time.sleep(0.004)\n  if first: print('swapping', flush=True); first=False",
        data,
      ],
      { reject: false },
    );
    let ended = false;
    await new Promise<void>((resolve, reject) => {
      swapper.stdout.once('data', () => {
        resolve();
      });
      void swapper.then((r) => {
        ended = true;
        reject(new Error(`the swapper ended: ${r.stderr}`));
      });
    });
    const outcomes: { exit: number; out: string; err: string; stage: string }[] = [];
    try {
      for (let i = 0; i < 16; i += 1) {
        const art = scratch.path(`art-race-${runtime}-${n++}`);
        const r = await cfh([
          'sandbox',
          'run',
          '--runtime',
          runtime,
          '--workspace',
          ws,
          '--mount',
          `${data}:/data:ro`,
          '--artifact-root',
          art,
          '--',
          'ls',
          '-a',
          '/data',
        ]);
        let stage = r.exitCode === 0 ? 'mounted' : 'planning';
        if (r.exitCode === 125 && existsSync(art)) {
          // Refused after the run directory existed: the evidence names the containment check.
          const report = await readJson<any>(path.join(await onlyRunDir(art), 'report.json'));
          expect(report.error.boundary, JSON.stringify(report.error)).toBe('sandbox');
          expect(report.error.code).toMatch(/^mount_(mismatch|source_changed)$/);
          stage = report.error.code as string;
        }
        outcomes.push({ exit: r.exitCode, out: r.stdout, err: r.stderr, stage });
      }
      expect(ended, 'the swapper kept swapping').toBe(false);
    } finally {
      swapper.kill('SIGKILL');
      await swapper;
    }
    const summary = outcomes.map((o) => `${o.exit}:${o.stage}`).join(' ');
    console.log(`${runtime}: 16 runs against a swap loop, exits ${summary}`);
    for (const o of outcomes) {
      // Never /etc: either the checked directory, or refused before the command ran.
      if (o.exit === 0)
        expect(o.out.split('\n').filter(Boolean).sort()).toEqual(['.', '..', 'marker']);
      else expect(o.exit, o.err).toBe(125);
      expect(o.out).not.toMatch(/passwd|hostname/);
    }
    if (runtime === 'runsc') {
      // gVisor shows virtual inodes, so cfh cannot verify; it refuses such a source outright.
      expect(outcomes.every((o) => o.exit === 125)).toBe(true);
      expect(outcomes.some((o) => /could be replaced by uid 4321/.test(o.err))).toBe(true);
    }
  });
});

describe('the start gate (runc)', () => {
  it('a container whose mount is not the checked object is stopped before its workload runs', async () => {
    // The source is re-checked before every create; to show the gate by itself, the spec
    // here claims another object's identity and the create goes to the engine directly.
    const ws = scratch.path('gate-ws');
    await mkdir(ws);
    await chown(ws, SANDBOX_UID, SANDBOX_UID);
    const real = await stat(ws, { bigint: true });
    const profile = loadProfile('untrusted-repo').profile;
    const spec = deriveContainerSpec({
      profile,
      imageRef: loadRecipe().ref,
      user: `${SANDBOX_UID}:${SANDBOX_UID}`,
      mounts: [
        {
          source: ws,
          target: '/workspace',
          mode: 'rw',
          identity: { dev: String(real.dev), ino: String(real.ino + 1n) },
        },
      ],
      command: ['sh', '-c', 'echo ran > /workspace/workload-ran'],
      containerName: `cfh-gate-test-${process.pid}`,
      labels: { 'cfh.run-id': 'gate-test', 'cfh.owner-pid': String(process.pid) },
    });
    expect(spec.mountCheck).toBe('gate');
    const container = await docker.createContainer(toCreateOptions(spec));
    const created = new DockerCreatedContainer(container, spec);
    try {
      const error = await created.start().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ContainmentError);
      expect((error as ContainmentError).code).toBe('mount_mismatch');
      expect((error as ContainmentError).boundary).toBe('sandbox');
      expect(existsSync(path.join(ws, 'workload-ran'))).toBe(false);
    } finally {
      await created.remove();
    }
  });
});

describe.each(['runc', 'runsc'])('the engine socket through a mount, under %s', (runtime) => {
  const skip = (ctx: { skip(note?: string): void }): void => {
    if (!runtimes.includes(runtime)) ctx.skip(`${runtime} is not registered`);
  };

  it('a hard link of the engine socket in the workspace: refused for uid 0, useless to others', async (ctx) => {
    skip(ctx);
    const repo = await copySampleRepo(scratch.path(`sock-${runtime}`));
    await link(engineSocket(), path.join(repo, 'innocent'));
    const root = await scratch.file(
      `root-${runtime}.yaml`,
      'extends: untrusted-repo\nname: root-sandbox\nuser: "0:0"\n',
    );
    const art = scratch.path(`art-sock-${runtime}`);
    const refused = await cfh([
      'sandbox',
      'run',
      '--profile',
      root,
      '--runtime',
      runtime,
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--',
      'true',
    ]);
    expect(refused.exitCode).toBe(125);
    expect(refused.stderr).toMatch(/hard link of the engine socket/);
    expect(await objectsOwnedBy(refused.pid)).toEqual([]);
    // The default sandbox user is not root and not in the socket's group: it runs, and the
    // kernel refuses it the socket.
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--runtime',
      runtime,
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--',
      'python3',
      '-c',
      "import socket\ns=socket.socket(socket.AF_UNIX)\ntry:\n  s.connect('/workspace/innocent'); print('connected')\nexcept OSError as e:\n  print('refused', e.errno)",
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('connected');
    expect(r.stdout).toMatch(/refused \d+/);
    await rm(path.join(repo, 'innocent'));
  });

  it('a socket bind-mounted below a source does not come along (non-recursive binds)', async (ctx) => {
    skip(ctx);
    const repo = await copySampleRepo(scratch.path(`bind-${runtime}`));
    const target = path.join(repo, 'covered');
    await writeFile(target, '');
    await execa('mount', ['--bind', engineSocket(), target]);
    try {
      const r = await cfh([
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--runtime',
        runtime,
        '--workspace',
        repo,
        '--artifact-root',
        scratch.path(`art-bind-${runtime}`),
        '--',
        'sh',
        '-c',
        'test -S /workspace/covered && echo socket || echo plain-file',
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('plain-file');
    } finally {
      await execa('umount', [target]);
    }
  });
});

afterAll(async () => {
  // Nothing of this file's runs is left on the engine.
  const left = await docker.listContainers({
    all: true,
    filters: { label: ['cfh.run-id=gate-test'] },
  });
  expect(left).toEqual([]);
});

describe('sources judged by what they are, not only by name', () => {
  it.runIf(process.getuid?.() === 0)(
    'a procfs mounted outside /proc is refused by its file system',
    async () => {
      // In a private mount namespace (nothing of it reaches the host's): a proc file system
      // at an ordinary-looking path, whose files hold every process's environment.
      const where = scratch.path('not-proc');
      await mkdir(where);
      const ws = await copySampleRepo(scratch.path('pseudo-ws'));
      const art = scratch.path('art-pseudo');
      const r = await refusal(
        [
          'sandbox',
          'run',
          '--workspace',
          ws,
          '--mount',
          `${where}:/p:ro`,
          '--artifact-root',
          art,
          '--',
          'cat',
          '/p/1/environ',
        ],
        art,
        {
          under: [
            'unshare',
            '--mount',
            '--propagation',
            'private',
            'sh',
            '-c',
            `mount -t proc proc '${where}' && exec "$@"`,
            'sh',
          ],
        },
      );
      expectOneLineRefusal(r, /lies on the kernel's proc file system/);
    },
  );
});
