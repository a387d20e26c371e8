// Retention and export of run evidence: `cfh runs prune` removes runs older than a duration,
// keeps the newest N and never removes one still being written; `cfh runs export
// --format otlp-json` writes the run as OpenTelemetry spans with digests and sizes, never the
// prompt, the model's text or a tool's input or output.
import { describe, expect, it } from 'vitest';
import {
  chmod,
  chown,
  cp,
  lchown,
  mkdir,
  readFile,
  readdir,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  REPO_ROOT,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';

const scratch = useScratch('retention');

/** One real run under `root`; its directory. */
async function oneRun(ws: string, root: string): Promise<string> {
  const r = await cfh(['sandbox', 'run', '--workspace', ws, '--artifact-root', root, '--', 'true']);
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}

describe('cfh runs prune', () => {
  it('removes old runs, keeps the newest N and the young, and never one still being written', async () => {
    const ws = await scratch.sampleRepo();
    const root = scratch.path('art');
    const fresh = await oneRun(ws, root);
    // Three runs from 2020: copies of a real run directory under old run ids.
    const old = [
      '20200101T000000Z-00000001',
      '20200102T000000Z-00000002',
      '20200103T000000Z-00000003',
    ];
    for (const id of old) await cp(fresh, path.join(root, id), { recursive: true });
    // A run being written, old by its id: its writer holds the lock.
    const writing = startCfh([
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path('live'),
      '--',
      'sleep',
      '60',
    ]);
    try {
      const live = await waitForEvent(scratch.path('live'), 'container_started');
      const liveOld = path.join(root, '20200104T000000Z-00000004');
      // Copied once the writer has written state.json `running` (no temp file in flight).
      for (let i = 0; i < 100; i += 1) {
        const state = await readFile(path.join(live, 'state.json'), 'utf8').catch(() => '');
        if (state.includes('"running"')) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await cp(live, liveOld, { recursive: true, filter: (src) => !src.endsWith('.tmp') });
      // Both directories' locks are the live writer's; the copy's lock is as fresh as it.
      const dry = await cfh([
        'runs',
        'prune',
        '--artifact-root',
        root,
        '--older-than',
        '30d',
        '--keep',
        '1',
        '--dry-run',
        '--json',
      ]);
      expect(dry.exitCode, dry.stderr).toBe(0);
      const planned = Object.fromEntries(
        (JSON.parse(dry.stdout) as { runId: string; action: string }[]).map((e) => [
          e.runId,
          e.action,
        ]),
      );
      expect(planned).toEqual({
        [path.basename(fresh)]: 'kept-newest',
        '20200104T000000Z-00000004': 'kept-writing',
        '20200103T000000Z-00000003': 'would-remove',
        '20200102T000000Z-00000002': 'would-remove',
        '20200101T000000Z-00000001': 'would-remove',
      });
      expect((await readdir(root)).sort()).toHaveLength(5);
      const pruned = await cfh([
        'runs',
        'prune',
        '--artifact-root',
        root,
        '--older-than',
        '30d',
        '--keep',
        '1',
      ]);
      expect(pruned.exitCode, pruned.stderr).toBe(0);
      expect(pruned.stdout).toMatch(/kept-writing\s+20200104T000000Z-00000004/);
      expect((await readdir(root)).sort()).toEqual(
        ['20200104T000000Z-00000004', path.basename(fresh)].sort(),
      );
      // The live run's own directory is young: kept, and its writer is undisturbed.
      const live2 = await cfh([
        'runs',
        'prune',
        '--artifact-root',
        scratch.path('live'),
        '--older-than',
        '0s',
      ]);
      expect(live2.stdout).toMatch(/kept-writing/);
    } finally {
      writing.kill('SIGINT');
      await writing;
    }
    expect(
      (await cfh(['runs', 'prune', '--artifact-root', root, '--older-than', 'soon'])).exitCode,
    ).toBe(2);
  });
});

describe('cfh runs prune in a sticky artifact root', () => {
  it.runIf(process.getuid?.() === 0)(
    "leaves another user's entries alone, however they are named or what they link to",
    async () => {
      // In a sticky root (/tmp-like) anyone may make an entry named like an old run; a
      // recursive removal with cfh's authority of what they control could be swapped onto
      // root's files elsewhere. Only what cfh's user or root owns is a run to remove.
      const ws = await scratch.sampleRepo();
      const root = scratch.path('art-sticky');
      await mkdir(root);
      await chmod(root, 0o1777);
      const fresh = await oneRun(ws, root);
      const ours = path.join(root, '20200101T000000Z-00000001');
      await cp(fresh, ours, { recursive: true });
      const victim = scratch.path('victim');
      await mkdir(victim);
      await writeFile(path.join(victim, 'precious'), 'root owns this\n');
      const theirs = path.join(root, '20200102T000000Z-00000002');
      await mkdir(theirs);
      await symlink(victim, path.join(theirs, 'sub'));
      await writeFile(path.join(theirs, 'events.jsonl'), '');
      await chown(theirs, 4321, 4321);
      await lchown(path.join(theirs, 'sub'), 4321, 4321);
      await chown(path.join(theirs, 'events.jsonl'), 4321, 4321);
      const pruned = await cfh([
        'runs',
        'prune',
        '--artifact-root',
        root,
        '--older-than',
        '30d',
        '--keep',
        '1',
        '--json',
      ]);
      expect(pruned.exitCode, pruned.stderr).toBe(0);
      const actions = JSON.parse(pruned.stdout) as { runId: string; action: string }[];
      expect(actions.map((a) => [a.runId, a.action])).toEqual([
        [path.basename(fresh), 'kept-newest'],
        ['20200101T000000Z-00000001', 'removed'],
      ]);
      expect((await readdir(root)).sort()).toEqual(
        [path.basename(fresh), '20200102T000000Z-00000002'].sort(),
      );
      expect(await readFile(path.join(victim, 'precious'), 'utf8')).toBe('root owns this\n');
    },
  );
});

describe('cfh runs export --format otlp-json', () => {
  it('one span per run, model call, tool call and container; digests and sizes, no payload', async () => {
    const ws = await scratch.sampleRepo();
    const root = scratch.path('art-export');
    const r = await cfh(
      agentRunArgs({
        workspace: ws,
        artifactRoot: root,
        profile: 'untrusted-repo',
        prompt: 'SECRET-PROMPT-TEXT',
        script: path.join(REPO_ROOT, 'test', 'fixtures', 'audit', 'hostile-agent.yaml'),
      }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const out = scratch.path('trace.json');
    const e = await cfh(['runs', 'export', dir, '--format', 'otlp-json', '--out', out]);
    expect(e.exitCode, e.stderr).toBe(0);
    const body = await readFile(out, 'utf8');
    const trace = JSON.parse(body);
    interface Span {
      name: string;
      traceId: string;
      spanId: string;
      parentSpanId?: string;
      attributes: { key: string; value: Record<string, unknown> }[];
    }
    const spans: Span[] = trace.resourceSpans[0].scopeSpans[0].spans;
    const names = spans.map((s) => s.name);
    expect(names.filter((n) => n === 'invoke_agent cfh')).toHaveLength(1);
    expect(names.filter((n) => n.startsWith('chat '))).toHaveLength(3);
    expect(names.filter((n) => n.startsWith('execute_tool '))).toHaveLength(5);
    expect(names.filter((n) => n.startsWith('container '))).toHaveLength(2);
    const root0 = spans[0];
    if (root0 === undefined) throw new Error('no span');
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([root0.traceId]));
    expect(spans.slice(1).every((s) => s.parentSpanId === root0.spanId)).toBe(true);
    expect(root0.traceId).toMatch(/^[0-9a-f]{32}$/);
    const attrs = (s: Span | undefined): Record<string, unknown> =>
      Object.fromEntries((s?.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
    const chat = attrs(spans.find((s) => s.name.startsWith('chat ')));
    expect(chat).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.usage.input_tokens': '100',
    });
    const exec = attrs(spans.find((s) => s.name === 'execute_tool exec'));
    expect(exec['gen_ai.tool.name']).toBe('exec');
    expect(exec['cfh.tool.decision']).toBe('run_in_sandbox');
    expect(exec['cfh.tool.input.sha256']).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(Number(exec['cfh.tool.output.bytes'])).toBeGreaterThan(0);
    // No payload: not the prompt, not a tool's input, not its output, not the answer.
    for (const payload of ['SECRET-PROMPT-TEXT', 'calc.py', 'ops@example.test', '__pwned', 'Done.'])
      expect(body, payload).not.toContain(payload);
  });
});
