// Adversarial round 3 on `cfh mcp` (the client is the model side): class 7 (the client
// cancels a call, `notifications/cancelled`: the command must stop, not only its answer),
// class 9 (a draft session's `runs_apply`, approved by the operator for the session, must
// not give the host a git setting that runs a command on `git status`), and the resources
// the client may read (run.json only: no other spelling of a URI reaches the evidence).
import { execa } from 'execa';
import { access, chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CFH_MAIN, REPO_ROOT, SANDBOX_UID, baseEnv, useScratch } from './helpers.js';
import { next } from './adv-round3-support.js';

const scratch = useScratch('adv3-mcp');

const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function connect(
  args: readonly string[],
): Promise<{ client: Client; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CFH_MAIN, 'mcp', ...args],
    env: baseEnv(),
    cwd: REPO_ROOT,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'adv3-client', version: '0.0.1' });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

interface Observation {
  status: string;
  summary: string;
  items: string[];
}
const observationOf = (r: unknown): Observation =>
  (r as { structuredContent: Observation }).structuredContent;

/** A git repository owned by the sandbox user, in a directory it can reach. */
async function repository(): Promise<string> {
  const ws = scratch.path(`ws-${next()}`);
  await chmod(path.dirname(ws), 0o711);
  await mkdir(ws);
  await writeFile(path.join(ws, 'README.md'), '# a repository\n');
  await execa('git', ['init', '-q', ws]);
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

describe('cfh mcp', () => {
  it('class 7: a call the client cancels does not go on writing the workspace', async () => {
    const ws = await repository();
    const { client, close } = await connect([
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path(`art-${next()}`),
    ]);
    const abort = new AbortController();
    const call = client
      .callTool(
        {
          name: 'sandbox_exec',
          arguments: { argv: ['sh', '-c', 'sleep 4; echo late > /workspace/after-cancel'] },
        },
        undefined,
        { signal: abort.signal },
      )
      .catch(() => undefined);
    await sleep(2000);
    abort.abort();
    await call;
    // The connection stays open (the run and its warm container too).
    await sleep(6000);
    const planted = await exists(path.join(ws, 'after-cancel'));
    await close();
    expect(planted).toBe(false);
  });

  it('class 9: runs_apply, approved for the session, does not give the host a .git/config that runs a command', async () => {
    const ws = await repository();
    const marker = scratch.path(`marker-${next()}`);
    const { client, close } = await connect([
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--workspace-mode',
      'draft',
      '--approve',
      'contract:runs_apply',
      '--artifact-root',
      scratch.path(`art-${next()}`),
    ]);
    try {
      const planted = await client.callTool({
        name: 'sandbox_exec',
        arguments: {
          argv: [
            'sh',
            '-c',
            `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n' >> /workspace/.git/config`,
          ],
        },
      });
      expect(observationOf(planted).status).toBe('success');
      const diff = observationOf(await client.callTool({ name: 'runs_diff', arguments: {} }));
      const patch = /patch ([0-9a-f]{64})/.exec(JSON.stringify(diff))?.[1];
      if (patch !== undefined) await client.callTool({ name: 'runs_apply', arguments: { patch } });
    } finally {
      await close();
    }
    await execa('git', ['-c', 'safe.directory=*', 'status'], { cwd: ws, reject: false });
    expect(await exists(marker)).toBe(false);
  });

  it('resources: no spelling of a URI other than run.json is served', async () => {
    const ws = await repository();
    const { client, close } = await connect([
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path(`art-${next()}`),
    ]);
    try {
      const listed = await client.listResources();
      const uri = listed.resources[0]?.uri ?? '';
      expect(uri).toMatch(/\/run\.json$/);
      const base = uri.slice(0, -'run.json'.length);
      for (const other of [
        `${base}events.jsonl`,
        `${base}run.json/../events.jsonl`,
        `${base}RUN.JSON`,
        `${base}run.json?x=1`,
        `${base}run.json#events.jsonl`,
        `${base}%2e%2e/events.jsonl`,
        `${base}snapshot.json`,
      ]) {
        const got = await client.readResource({ uri: other }).then(
          (r) => JSON.stringify(r),
          () => 'refused',
        );
        expect(got, other).toBe('refused');
      }
    } finally {
      await close();
    }
  });
});
