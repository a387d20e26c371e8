// States that do not lie: a run whose state is not terminal (created, running, or no
// state.json yet) and whose writer is gone is `abandoned` in runs list and runs show. The
// writer is judged by its identity (state.json's writer, there from the first file, or the
// snapshot's caller: pid, process start time, host), and where there is none, or it is
// another host's, by the run directory lock's heartbeat.
import { describe, expect, it } from 'vitest';
import { mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { newRunId } from '../../src/evidence/run-id.js';
import { currentOwner } from '../../src/sandbox/owner.js';
import { cfh, docker, startCfh, useScratch } from './helpers.js';

const scratch = useScratch('runs-state');

/** This test process, as cfh would record it: alive for as long as the test runs. */
const alive = currentOwner();
/** The same pid with another start time: a process that is gone (pid reused). */
const gone = { ...alive, start: `${alive.start.split('/')[0] ?? ''}/1` };
const foreign = { ...alive, host: 'another-host.test' };

interface Fixture {
  readonly state?: Record<string, unknown>;
  /** 'fresh': held by this process now; 'stale': a lock left by a dead writer. */
  readonly lock?: 'fresh' | 'stale';
}

async function fixture(
  root: string,
  f: Fixture,
): Promise<{ runId: string; release?: () => Promise<void> }> {
  const runId = newRunId();
  const dir = path.join(root, runId);
  await mkdir(dir, { recursive: true });
  if (f.state !== undefined)
    await writeFile(path.join(dir, 'state.json'), JSON.stringify({ runId, ...f.state }));
  if (f.lock === 'fresh') {
    const release = await lockfile.lock(dir, {
      lockfilePath: path.join(dir, '.lock'),
      realpath: false,
      stale: 30_000,
      update: 10_000,
    });
    return { runId, release };
  }
  if (f.lock === 'stale') {
    await mkdir(path.join(dir, '.lock'));
    const old = new Date(Date.now() - 120_000);
    await utimes(path.join(dir, '.lock'), old, old);
  }
  return { runId };
}

interface Listed {
  runId: string;
  state: string;
  writer?: string;
}

async function listed(root: string): Promise<{ json: Listed[]; text: string }> {
  const json = await cfh(['runs', 'list', '--artifact-root', root, '--json']);
  const text = await cfh(['runs', 'list', '--artifact-root', root]);
  expect(json.exitCode, json.stderr).toBe(0);
  return { json: JSON.parse(json.stdout) as Listed[], text: text.stdout };
}

function shownAs(text: string, runId: string): string | undefined {
  return new RegExp(`^${runId}\\s+(\\S+)`, 'm').exec(text)?.[1];
}

describe('runs list and runs show: the writer decides abandoned', () => {
  it.each<[string, Fixture, string, string]>([
    ['created, writer gone', { state: { state: 'created', writer: gone } }, 'gone', 'abandoned'],
    ['created, writer alive', { state: { state: 'created', writer: alive } }, 'alive', 'created'],
    ['no state.json and no lock', {}, 'gone', 'abandoned'],
    ['no state.json, the lock held', { lock: 'fresh' }, 'alive', 'unknown'],
    [
      'running, no identity, a stale lock',
      { state: { state: 'running' }, lock: 'stale' },
      'gone',
      'abandoned',
    ],
    [
      'running, another host, its lock fresh',
      { state: { state: 'running', writer: foreign }, lock: 'fresh' },
      'foreign-host',
      'running',
    ],
    [
      'running, another host, no lock',
      { state: { state: 'running', writer: foreign } },
      'gone',
      'abandoned',
    ],
    [
      'a garbage state, writer gone',
      { state: { state: 'zombie', writer: gone } },
      'gone',
      'abandoned',
    ],
  ])('%s', async (_name, f, writer, shown) => {
    const root = scratch.path(`art-${Math.random().toString(16).slice(2)}`);
    const { runId, release } = await fixture(root, f);
    try {
      const { json, text } = await listed(root);
      expect(json).toEqual([expect.objectContaining({ runId, writer })]);
      expect(shownAs(text, runId)).toBe(shown);
      const show = await cfh(['runs', 'show', runId, '--artifact-root', root]);
      expect(show.exitCode, show.stderr).toBe(0);
      const state = show.stdout.split('\n').find((l) => l.startsWith('state '));
      expect(state).toMatch(
        shown === 'abandoned'
          ? /^state\s+abandoned \(stopped at /
          : new RegExp(`^state\\s+${shown} `),
      );
      // No event log yet: said so, not called an intact chain.
      expect(show.stdout).toMatch(
        /^events\s+none: the writer stopped before it began events\.jsonl$/m,
      );
      const detail = JSON.parse(
        (await cfh(['runs', 'show', runId, '--artifact-root', root, '--json'])).stdout,
      ) as { writer?: string };
      expect(detail.writer).toBe(writer);
    } finally {
      await release?.();
    }
  });

  it('a terminal run is never abandoned, whoever wrote it', async () => {
    const root = scratch.path('art-terminal');
    const { runId } = await fixture(root, {
      state: { state: 'completed', exitCode: 0, writer: gone },
    });
    const { json, text } = await listed(root);
    expect(json).toEqual([expect.objectContaining({ runId, state: 'completed' })]);
    expect(json[0]?.writer).toBeUndefined();
    expect(shownAs(text, runId)).toBe('completed');
  });
});

describe('a real run whose cfh is killed before it is running', () => {
  it('is abandoned, not created', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-killed');
    // An egress posture: between `created` and `running` cfh starts the guard and the
    // gateway, a window of about a second to kill it in.
    const child = startCfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--network',
      'allowlist',
      '--allow',
      '127.0.0.1:9',
      '--',
      'true',
    ]);
    let runId: string | undefined;
    try {
      const deadline = Date.now() + 60_000;
      while (runId === undefined && Date.now() < deadline) {
        for (const name of await readdir(root).catch(() => [])) {
          const state = await readFile(path.join(root, name, 'state.json'), 'utf8').catch(() => '');
          if (/"state": "created"/.test(state) && /"lastEvent"/.test(state)) runId = name;
        }
        if (runId === undefined) await new Promise((r) => setTimeout(r, 10));
      }
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      expect(runId, 'the run never reached created').toBeDefined();
      const state = JSON.parse(
        await readFile(path.join(root, runId ?? '', 'state.json'), 'utf8'),
      ) as { state: string };
      expect(state.state, 'killed too late: the run was already running').toBe('created');

      const { json, text } = await listed(root);
      expect(json).toEqual([expect.objectContaining({ runId, state: 'created', writer: 'gone' })]);
      expect(shownAs(text, runId ?? '')).toBe('abandoned');
    } finally {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      // What the killed cfh left (guard container, network), removed by its run id.
      if (runId !== undefined) {
        const label = { label: [`cfh.run-id=${runId}`] };
        for (const c of await docker.listContainers({ all: true, filters: label }))
          await docker.getContainer(c.Id).remove({ force: true });
        for (const n of await docker.listNetworks({ filters: label }))
          await docker.getNetwork(n.Id).remove();
      }
    }
  });
});
