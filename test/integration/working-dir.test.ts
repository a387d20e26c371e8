// AH-CONT-6: each executor's working directory resolves inside its own mount table, and a
// child's inside the child's, never a parent's. Checked on the engine's side: cfh reaches
// the engine through a recording proxy, and every container it creates (the command's, the
// agent's workload and file-tool containers, per run and per call, a child's) and every exec
// it runs in one must name a working directory inside a directory that same container binds
// from the run's declared workspace or mounts. Where the model's own commands run (the
// command, exec), the kernel's view from inside agrees: the process's cwd lies on one of
// those mounts, not on the image's root.
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startEngineRecorder,
  type EngineExchange,
  type EngineRecorder,
} from './engine-recorder.js';
import { agentRunArgs, cfh, onlyRunDir, ownBySandbox, readJson, useScratch } from './helpers.js';

const scratch = useScratch('working-dir');
const PROBE = ['sh', '-c', 'readlink /proc/self/cwd; cat /proc/self/mountinfo'];

interface CreateBody {
  readonly WorkingDir: string;
  readonly HostConfig: { readonly Mounts: { Type: string; Source: string; Target: string }[] };
}

const inside = (dir: string, root: string): boolean =>
  dir === root || dir.startsWith(root.endsWith('/') ? root : `${root}/`);

/**
 * Every container created for `runId` and every exec in it, each with its working directory
 * and the bind mount of that container holding it, whose source must be one of `sources`.
 */
function executorsOf(exchanges: readonly EngineExchange[], runId: string, sources: string[]) {
  const found: { what: string; cwd: string; mount: string | undefined }[] = [];
  const creates = exchanges.filter(
    (x) =>
      x.method === 'POST' && /^\/containers\/create\?name=/.test(x.path) && x.path.includes(runId),
  );
  for (const c of creates) {
    const body = c.request as CreateBody;
    const name = /name=([^&]+)/.exec(c.path)?.[1] ?? '?';
    const declared = body.HostConfig.Mounts.filter(
      (m) => m.Type === 'bind' && sources.includes(m.Source),
    );
    const holding = (cwd: string) =>
      declared.filter((m) => inside(cwd, m.Target)).map((m) => m.Target)[0];
    found.push({ what: name, cwd: body.WorkingDir, mount: holding(body.WorkingDir) });
    const id = (c.response as { Id?: string } | undefined)?.Id;
    expect(id, `the engine's answer to creating ${name}`).toBeDefined();
    for (const e of exchanges)
      if (e.method === 'POST' && e.path.startsWith(`/containers/${String(id)}/exec`)) {
        const cwd = (e.request as { WorkingDir?: string }).WorkingDir ?? body.WorkingDir;
        const argv = (e.request as { Cmd: string[] }).Cmd.join(' ').slice(0, 60);
        found.push({ what: `exec in ${name}: ${argv}`, cwd, mount: holding(cwd) });
      }
  }
  return found;
}

/** The kernel's answer from inside: the cwd, and the mount point it lies on. */
function probed(output: string): { cwd: string; mountPoint: string } {
  const [cwd = '', ...mountinfo] = output.trim().split('\n');
  const points = mountinfo.map((l) => l.split(' ')[4] ?? '').filter((p) => inside(cwd, p));
  const mountPoint = points.reduce((a, b) => (b.length > a.length ? b : a), '');
  return { cwd, mountPoint };
}

describe('every executor works inside its own mount table (AH-CONT-6)', () => {
  let recorder: EngineRecorder;
  let env: Record<string, string>;
  let data: string;

  beforeAll(async () => {
    recorder = await startEngineRecorder(scratch.path('engine.sock'));
    env = { DOCKER_HOST: `unix://${recorder.socket}` };
    data = scratch.path('data');
    await mkdir(data);
    await writeFile(path.join(data, 'note'), 'data\n');
    await ownBySandbox(data);
  });
  afterAll(async () => {
    await recorder.close();
  });

  it('a command run: the container, and the command inside it', async () => {
    const ws = await scratch.sampleRepo();
    const root = scratch.path('art-command');
    const run = await cfh(
      [
        ...['sandbox', 'run', '--artifact-root', root, '--workspace', ws],
        ...['--mount', `${data}:/data:ro`, '--', ...PROBE],
      ],
      { env },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const runId = path.basename(dir);
    const executors = executorsOf(recorder.exchanges, runId, [ws, data]);
    expect(executors.length).toBeGreaterThan(0);
    for (const e of executors) expect(e.mount, `${e.what} works in ${e.cwd}`).toBeDefined();
    const out = await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8');
    expect(['/workspace', '/data'], out).toContain(probed(out).mountPoint);
  });

  it('an agent run: exec, the file tools, and a child (per-call containers), each in its own table', async () => {
    const ws = await scratch.sampleRepo();
    const root = scratch.path('art-agent');
    const call = (name: string, input: unknown) => ({ name, input });
    const profile = {
      extends: 'untrusted-repo',
      name: 'cwd-parent',
      tools: ['exec', 'read_file', 'list_dir', 'grep'],
      mounts: [{ source: data, target: '/data', mode: 'ro' }],
      children: {
        sub: {
          description: 'lists, per call',
          tools: ['exec', 'list_dir'],
          workspace: { mode: 'ro' },
          toolLifetime: 'per-call',
          budgets: { maxModelTurns: 3 },
        },
      },
    };
    const script = {
      turns: [
        {
          tool_calls: [
            call('exec', { command: PROBE }),
            call('read_file', { path: 'calc.py' }),
            call('list_dir', { path: '.' }),
            call('grep', { pattern: 'def', path: '.' }),
          ],
        },
        { tool_calls: [call('delegate', { profile: 'sub', task: 'look around' })] },
        { text: 'done' },
      ],
      children: {
        sub: {
          turns: [
            { tool_calls: [call('exec', { command: PROBE }), call('list_dir', { path: '.' })] },
            { text: 'seen' },
          ],
        },
      },
    };
    const r = await cfh(
      agentRunArgs({
        workspace: ws,
        artifactRoot: root,
        profile: await scratch.file('parent.json', JSON.stringify(profile)),
        script: await scratch.file('script.json', JSON.stringify(script)),
      }),
      { env },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const [child] = await readdir(path.join(dir, 'children'));
    const childDir = path.join(dir, 'children', String(child));
    const runs = [
      { dir, sources: [ws, data], kinds: ['cfh-tools-', 'cfh-files-'] },
      // The child's own table: the workspace it was given, never the parent's /data.
      { dir: childDir, sources: [ws], kinds: ['cfh-tools-', 'cfh-files-'] },
    ];
    for (const run of runs) {
      const { runId } = await readJson<{ runId: string }>(path.join(run.dir, 'snapshot.json'));
      const executors = executorsOf(recorder.exchanges, runId, run.sources);
      for (const kind of run.kinds)
        expect(
          executors.some((e) => e.what.startsWith(kind)),
          `${runId}: ${kind}`,
        ).toBe(true);
      expect(executors.filter((e) => e.what.startsWith('exec in')).length).toBeGreaterThan(1);
      for (const e of executors) expect(e.mount, `${e.what} works in ${e.cwd}`).toBeDefined();
      const out = await readFile(path.join(run.dir, 'outputs', 'call-0001.stdout'), 'utf8');
      expect(['/workspace', '/data'], out).toContain(probed(out).mountPoint);
    }
  });
});
