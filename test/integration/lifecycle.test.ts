// Cancellation and crash recovery (AH-LIFE-1..3): SIGINT/SIGTERM cancel and clean up;
// after SIGKILL of cfh, `cfh reap` or the next cfh start removes the orphan.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  EVERYTHING_SERVER,
  NODE,
  processesWithEnv,
  profileFile,
  scriptFile,
} from './host-tools-support.js';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  readEvents,
  readJson,
  removeDir,
  runIdOf,
  onlyRunDir,
  startCfh,
  tempDir,
  useScratch,
  waitForEvent,
} from './helpers.js';

let scratch: string;
let workspace: string;
let n = 0;

beforeAll(async () => {
  scratch = await tempDir('life');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
});
afterAll(async () => {
  await removeDir(scratch);
});

function artifactRoot(): string {
  n += 1;
  return path.join(scratch, `art-${n}`);
}

async function waitForState(dir: string, state: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const now = await readJson<{ state?: unknown }>(path.join(dir, 'state.json')).catch(
      () => undefined,
    );
    if (now?.state === state) return;
    if (Date.now() > deadline) throw new Error(`state.json never said ${state} in ${dir}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function startSleeping(root: string) {
  return startCfh([
    'sandbox',
    'run',
    '--workspace',
    workspace,
    '--artifact-root',
    root,
    '--',
    'sleep',
    '300',
  ]);
}

describe.each([
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const)('%s', (signal, code) => {
  it(`cancels the run: exit ${code}, state cancelled, no container left`, async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    child.kill(signal);
    const result = await child;
    expect(result.exitCode).toBe(code);
    const state = await readJson(path.join(dir, 'state.json'));
    expect(state).toMatchObject({
      state: 'cancelled',
      terminalReason: `cancelled:${signal}`,
      exitCode: code,
    });
    const types = (await readEvents(dir)).map((e) => e.type);
    expect(types).toContain('cancelled');
    expect(types.indexOf('container_removed')).toBeLessThan(types.indexOf('run_finished'));
    expect(types.at(-1)).toBe('run_finished');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});

/**
 * SIGKILLs a sleeping run and reaps its orphan with `cfh reap`, checking each step. Returns
 * true when another cfh swept the orphan first (nothing was checked of reap then).
 */
async function orphanReapedByReap(): Promise<boolean> {
  const root = artifactRoot();
  const child = startSleeping(root);
  const dir = await waitForEvent(root, 'container_started');
  // The event is appended before state.json says running: wait for both, or the kill can
  // land between them and the record stops at `created`.
  await waitForState(dir, 'running');
  child.kill('SIGKILL');
  await child;
  const runId = runIdOf(dir);
  if ((await containersOfRun(runId)).length === 0) return true;
  // Its record stops at `running`; `runs list` sees the writer is gone.
  const listed = await cfh(['runs', 'list', '--json', '--artifact-root', root]);
  expect(JSON.parse(listed.stdout)).toEqual([
    expect.objectContaining({ runId, state: 'running', writer: 'gone' }),
  ]);
  const text = await cfh(['runs', 'list', '--artifact-root', root]);
  expect(text.stdout).toMatch(new RegExp(`^${runId}  abandoned `, 'm'));

  const dry = await cfh(['reap', '--dry-run', '--json', '--run', runId]);
  expect(dry.exitCode).toBe(0);
  if ((await containersOfRun(runId)).length === 0) return true;
  expect(JSON.parse(dry.stdout)).toContainEqual(
    expect.objectContaining({ runId, kind: 'container', owner: 'gone', action: 'would-remove' }),
  );

  // Scoped to this test's run: a global reap could take another test's objects.
  const reap = await cfh(['reap', '--json', '--run', runId]);
  expect(reap.exitCode).toBe(0);
  if (reap.stdout.trim() === '[]') return true;
  expect(JSON.parse(reap.stdout)).toContainEqual(
    expect.objectContaining({ runId, action: 'removed' }),
  );
  expect(await containersOfRun(runId)).toEqual([]);
  return false;
}

describe('SIGKILL of cfh', () => {
  it('leaves an orphan that `cfh reap` finds and removes', async () => {
    // Any cfh start on this machine sweeps orphans (the next test's mechanism), so another
    // suite's or test's run may take this one first: then the scenario is played again.
    for (let attempt = 1; ; attempt++) {
      const swept = await orphanReapedByReap();
      if (!swept) return;
      if (attempt === 5) throw new Error('each orphan was swept by another cfh before reap ran');
    }
  });

  it('the next cfh start removes the orphan by itself', async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    child.kill('SIGKILL');
    await child;
    const runId = runIdOf(dir);
    expect(await containersOfRun(runId)).toHaveLength(1);
    const next = await cfh([
      'sandbox',
      'run',
      '--workspace',
      workspace,
      '--artifact-root',
      artifactRoot(),
      '--',
      'true',
    ]);
    expect(next.exitCode).toBe(0);
    expect(await containersOfRun(runId)).toEqual([]);
  });

  it('reap leaves the containers of a live cfh alone', async () => {
    const root = artifactRoot();
    const child = startSleeping(root);
    const dir = await waitForEvent(root, 'container_started');
    const runId = runIdOf(dir);
    const reap = await cfh(['reap', '--json', '--run', runId]);
    expect(JSON.parse(reap.stdout)).toContainEqual(
      expect.objectContaining({ runId, owner: 'alive', action: 'kept' }),
    );
    expect(await containersOfRun(runId)).toHaveLength(1);
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(130);
    expect(await containersOfRun(runId)).toEqual([]);
  });
});

// AH-LIFE-3, one run-dependency builder (src/cli/run-deps.ts): whichever kind of run starts
// next, its start-up sweep stops what a killed run of the other kind left. The processes
// are found in the kernel's process table by the test's own tag, not in cfh's records.
describe('the next run of any kind sweeps what a killed agent run left', () => {
  const hostScratch = useScratch('life-host');

  async function waitGone(tag: string, ms = 15_000): Promise<number[]> {
    const until = Date.now() + ms;
    for (;;) {
      const left = await processesWithEnv('CFH_TEST_TAG', tag);
      if (left.length === 0 || Date.now() > until) return left;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it.each([
    { label: 'a plain `cfh sandbox run -- true`', agent: false },
    { label: 'an agent run', agent: true },
  ])('$label stops the host-tool server of an agent run killed with SIGKILL', async ({ agent }) => {
    const tag = `sweep-${agent ? 'agent' : 'command'}-${process.pid}`;
    const profile = await profileFile(hostScratch, `sweep-${String(agent)}`, {
      hostTools: [
        {
          name: 'everything',
          kind: 'mcp',
          command: NODE,
          args: [EVERYTHING_SERVER],
          env: { CFH_TEST_TAG: { value: tag } },
          timeoutSeconds: 300,
          tools: [
            {
              name: 'trigger-long-running-operation',
              riskClass: 'read_only',
              sideEffectClass: 'none',
            },
          ],
        },
      ],
    });
    const script = await scriptFile(hostScratch, `sweep-${String(agent)}`, [
      [
        {
          name: 'mcp__everything__trigger-long-running-operation',
          input: { duration: 240, steps: 240 },
        },
      ],
    ]);
    const root = hostScratch.path(`art-killed-${String(agent)}`);
    // The test's own ledger: the sweep sees this test's host processes and no one else's.
    const env = { CFH_STATE_DIR: hostScratch.path(`state-${String(agent)}`) };
    const repo = await hostScratch.sampleRepo();
    const child = startCfh(agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }), {
      env,
    });
    try {
      await waitForEvent(root, 'host_tool_progress');
      child.kill('SIGKILL');
      await child;
      expect((await processesWithEnv('CFH_TEST_TAG', tag)).length).toBeGreaterThan(0);
      const next = agent
        ? await cfh(
            agentRunArgs({
              workspace: repo,
              artifactRoot: hostScratch.path('art-next-agent'),
              script: await hostScratch.file('answer.yaml', 'turns:\n  - text: done\n'),
            }),
            { env },
          )
        : await cfh(
            [
              'sandbox',
              'run',
              '--workspace',
              repo,
              '--artifact-root',
              artifactRoot(),
              '--',
              'true',
            ],
            { env },
          );
      expect(next.exitCode, next.stderr).toBe(0);
      expect(await waitGone(tag)).toEqual([]);
      expect(await readdir(path.join(env.CFH_STATE_DIR, 'host-processes'))).toEqual([]);
    } finally {
      // Whatever failed, nothing of this test outlives it.
      if ((await processesWithEnv('CFH_TEST_TAG', tag)).length > 0)
        await cfh(['reap', '--run', runIdOf(await onlyRunDir(root))], { env }).catch(
          () => undefined,
        );
    }
  });
});
