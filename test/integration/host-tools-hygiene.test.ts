// No host-tool process outlives its run (AH-LIFE-3), checked in the process table (every
// process whose environment carries the test's own tag), not only in cfh's records: after a
// normal end (a server whose tree has a child in a session of its own), after SIGINT, and
// after SIGKILL of cfh followed by `cfh reap --run`.
import { describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  runIdOf,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';
import {
  EVERYTHING_SERVER,
  MEMORY_SERVER,
  NODE,
  processesWithEnv,
  profileFile,
  scriptFile,
} from './host-tools-support.js';

const scratch = useScratch('host-hygiene');

async function waitGone(tag: string, ms = 10_000): Promise<number[]> {
  const until = Date.now() + ms;
  for (;;) {
    const left = await processesWithEnv('CFH_TEST_TAG', tag);
    if (left.length === 0 || Date.now() > until) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function longRunningProfile(name: string, tag: string): Promise<string> {
  return profileFile(scratch, name, {
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
}

const longCall = [
  [
    {
      name: 'mcp__everything__trigger-long-running-operation',
      input: { duration: 240, steps: 240 },
    },
  ],
];

describe('host-tool processes never outlive the run', () => {
  it('after a normal end, the whole tree is gone, a child in its own session too', async () => {
    const tag = `tree-${process.pid}`;
    const profile = await profileFile(scratch, 'tree', {
      hostTools: [
        {
          name: 'memory',
          kind: 'mcp',
          // The server's tree: a child that leaves the group (setsid) and one that stays.
          command: '/bin/sh',
          args: ['-c', 'setsid sleep 300 & sleep 300 & exec "$0" "$@"', NODE, MEMORY_SERVER],
          env: {
            MEMORY_FILE_PATH: { value: scratch.path('tree-graph.jsonl') },
            CFH_TEST_TAG: { value: tag },
          },
          start: 'run-start',
          tools: [{ name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' }],
        },
      ],
    });
    const script = await scriptFile(scratch, 'tree', [
      [{ name: 'mcp__memory__read_graph', input: {} }],
    ]);
    const root = scratch.path('art-tree');
    const stateDir = scratch.path('state-tree');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
      { env: { CFH_STATE_DIR: stateDir } },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await processesWithEnv('CFH_TEST_TAG', tag)).toEqual([]);
    const stopped = (await readEvents(await onlyRunDir(root))).filter(
      (e) => e.type === 'host_tool_stopped',
    );
    // run-start: the probe is the session; one server, stopped once at the end, and the
    // setsid child was found by its marker after the group was gone.
    expect(stopped).toHaveLength(1);
    expect(stopped[0]?.data).toMatchObject({ reason: 'run_ended' });
    expect(Number(stopped[0]?.data.strays)).toBeGreaterThanOrEqual(1);
    expect(await readdir(`${stateDir}/host-processes`)).toEqual([]);
  });

  it('after SIGINT, the server in the middle of a call is stopped with its tree', async () => {
    const tag = `sigint-${process.pid}`;
    const profile = await longRunningProfile('sigint', tag);
    const script = await scriptFile(scratch, 'sigint', longCall);
    const root = scratch.path('art-sigint');
    const child = startCfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
      { env: { CFH_STATE_DIR: scratch.path('state-sigint') } },
    );
    let settled = false;
    try {
      await waitForEvent(root, 'host_tool_progress');
      expect((await processesWithEnv('CFH_TEST_TAG', tag)).length).toBeGreaterThan(0);
      child.kill('SIGINT');
      const result = await child;
      settled = true;
      expect(result.exitCode).toBe(130);
      expect(await processesWithEnv('CFH_TEST_TAG', tag)).toEqual([]);
    } finally {
      // A failed assertion must not leave cfh (and its server) behind: SIGINT cleans up.
      if (!settled) {
        child.kill('SIGINT');
        await child;
      }
    }
  });

  it('after SIGKILL of cfh, the server lives on until `cfh reap --run` stops it', async () => {
    const tag = `sigkill-${process.pid}`;
    const profile = await longRunningProfile('sigkill', tag);
    const script = await scriptFile(scratch, 'sigkill', longCall);
    const root = scratch.path('art-sigkill');
    const env = { CFH_STATE_DIR: scratch.path('state-sigkill') };
    const child = startCfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
      { env },
    );
    let reaped = false;
    try {
      const dir = await waitForEvent(root, 'host_tool_progress');
      child.kill('SIGKILL');
      await child;
      // Nobody stopped it: the process table still has it, orphaned.
      const orphans = await processesWithEnv('CFH_TEST_TAG', tag);
      expect(orphans.length).toBeGreaterThan(0);
      const dry = await cfh(['reap', '--dry-run', '--json', '--run', runIdOf(dir)], { env });
      expect(JSON.parse(dry.stdout)).toEqual([
        expect.objectContaining({ kind: 'host-process', action: 'would-remove', owner: 'gone' }),
      ]);
      const reap = await cfh(['reap', '--json', '--run', runIdOf(dir)], { env });
      reaped = true;
      expect(reap.exitCode, reap.stderr).toBe(0);
      expect(JSON.parse(reap.stdout)).toEqual([
        expect.objectContaining({ kind: 'host-process', action: 'removed', runId: runIdOf(dir) }),
      ]);
      expect(await waitGone(tag)).toEqual([]);
      expect(await readdir(`${env.CFH_STATE_DIR}/host-processes`)).toEqual([]);
    } finally {
      if (!reaped) {
        await cfh(['reap', '--run', runIdOf(await onlyRunDir(root))], { env }).catch(
          () => undefined,
        );
      }
    }
  });
});
