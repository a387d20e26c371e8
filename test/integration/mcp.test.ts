// `cfh mcp` driven by the SDK's own client over stdio, against the real engine: one
// connection is one run whose model side is the client. Every call goes through the mediator
// (a write that needs approval is answered approval_required with its digest and writes
// nothing), the client's tricks are refused for the right reason and recorded, the evidence
// is readable as resources, and closing the connection ends the run: terminal record,
// nothing left on the engine, `cfh audit` passes.
import { describe, expect, it } from 'vitest';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CFH_MAIN,
  REPO_ROOT,
  baseEnv,
  cfh,
  containersOfRun,
  onlyRunDir,
  ownBySandbox,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('mcp');

const PROFILE = [
  'extends: untrusted-repo',
  'policy:',
  '  - id: writes-need-approval',
  '    match: { tool: write_file }',
  '    decision: approval_required',
  '    reason: a person approves every write',
  '',
].join('\n');

interface Observation {
  status: string;
  summary: string;
  items: string[];
}

async function connect(args: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CFH_MAIN, 'mcp', ...args],
    env: baseEnv(),
    cwd: REPO_ROOT,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const client = new Client({ name: 'cfh-test-client', version: '1.2.3' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

/**
 * The run's report once cfh has written it. The SDK's close ends cfh's stdin and waits for
 * it (2 s, then SIGTERM): a clean close within that is a run that ends `completed`.
 */
async function reportOf(root: string): Promise<{ dir: string; status: string; reason: string }> {
  for (let i = 0; ; i += 1) {
    try {
      const dir = await onlyRunDir(root);
      const r = await readJson<{ status: string; terminalReason: string }>(
        path.join(dir, 'report.json'),
      );
      return { dir, status: r.status, reason: r.terminalReason };
    } catch (error) {
      if (i > 300) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError === true, obs: r.structuredContent as Observation };
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

describe('cfh mcp over stdio', () => {
  it('lists the profile tools, answers calls through the mediator, and leaves a clean, audited run', async () => {
    const repo = await scratch.sampleRepo();
    await writeFile(path.join(repo, 'a.txt'), 'alpha\n');
    await ownBySandbox(path.join(repo, 'a.txt'));
    const profile = await scratch.file('profile.yaml', PROFILE);
    const root = scratch.path('art-main');
    const c = await connect(['--profile', profile, '--workspace', repo, '--artifact-root', root]);

    // Listed right after `initialized`, before the run has opened: the list waits for the
    // run rather than answer empty, since neither list is announced as changing.
    const caps = c.client.getServerCapabilities();
    expect(caps?.resources?.listChanged).toBeUndefined();
    expect(caps?.tools?.listChanged).toBeUndefined();
    const early = (await c.client.listResources()).resources.map((r) => r.name).sort();
    // class: the client is the model side: no evidence (events, governance, snapshot, report).
    expect(early).toEqual(['run.json']);

    const tools = (await c.client.listTools()).tools.map((t) => t.name).sort();
    expect(tools).toEqual(
      ['edit_file', 'grep', 'list_dir', 'read_file', 'sandbox_exec', 'write_file'].sort(),
    );
    const exec = (await c.client.listTools()).tools.find((t) => t.name === 'sandbox_exec');
    expect(Object.keys(exec?.inputSchema.properties ?? {}).sort()).toEqual(['argv', 'timeout']);

    // exec in the run's workload container.
    const ran = await call(c.client, 'sandbox_exec', { argv: ['cat', 'a.txt'] });
    expect(ran.isError, JSON.stringify(ran.obs)).toBe(false);
    expect(ran.obs.items.join('\n')).toContain('alpha');
    // argv is an argv: no shell ever sees it, so a metacharacter is just a byte.
    const tricky = await call(c.client, 'sandbox_exec', {
      argv: ['echo', '$(rm a.txt)', ';', 'rm', 'a.txt', '`id`'],
    });
    expect(tricky.obs.items.join('\n')).toContain('$(rm a.txt) ; rm a.txt `id`');
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    // The built-in's own field name is not the MCP contract: refused as invalid.
    const wrongField = await call(c.client, 'sandbox_exec', { command: ['id'] });
    expect(wrongField.obs.status).toBe('error');
    expect(wrongField.obs.summary).toContain('invalid arguments');

    const read = await call(c.client, 'read_file', { path: 'a.txt' });
    expect(read.obs.status).toBe('success');
    expect(read.obs.items.join('')).toContain('alpha');
    // Path traversal out of the workspace: refused by the tool's mount boundary.
    const escape = await call(c.client, 'read_file', { path: '../../../../etc/shadow' });
    expect(escape.obs.status).not.toBe('success');
    expect(escape.obs.items.join('')).not.toContain('root:');

    // A write that needs approval: the client's word approves nothing.
    const write = await call(c.client, 'write_file', { path: 'b.txt', content: 'pwned' });
    expect(write.isError).toBe(true);
    expect(write.obs.status).toBe('approval_required');
    expect(write.obs.summary).toMatch(/rule writes-need-approval, args sha256:[0-9a-f]{64}/);
    expect(await exists(path.join(repo, 'b.txt'))).toBe(false);

    // Tools off the MCP surface: the built-in's internal name, and a tool not in the profile.
    const internal = await call(c.client, 'exec', { command: ['id'] });
    expect(internal.obs.status).toBe('error');
    expect(internal.obs.summary).toContain('unknown tool');
    const foreign = await call(c.client, 'network_fetch', { url: 'http://127.0.0.1:9/' });
    expect(foreign.obs.summary).toContain('unknown tool');

    // What an agent run shows its model, as the one resource; never the evidence.
    const resources = (await c.client.listResources()).resources.map((r) => r.name).sort();
    expect(resources).toEqual(['run.json']);
    const runUri = (await c.client.listResources()).resources.find(
      (r) => r.name === 'run.json',
    )?.uri;
    expect(runUri).toMatch(/^cfh:\/\/run\/\d{8}T\d{6}Z-[0-9a-f]{8}\/run\.json$/);
    const content = (await c.client.readResource({ uri: runUri ?? '' })).contents[0];
    const view = JSON.parse(
      content !== undefined && 'text' in content ? content.text : '{}',
    ) as Record<string, unknown>;
    expect(view.modelSide).toEqual({
      kind: 'mcp-client',
      transport: 'stdio',
      client: { name: 'cfh-test-client', version: '1.2.3' },
      protocolVersion: null,
      directCommand: null,
    });
    expect(Object.keys(view).sort()).toEqual(
      ['cfcMode', 'evidence', 'modelSide', 'profile', 'runId', 'tools', 'workspaceMode'].sort(),
    );
    for (const file of ['events.jsonl', 'governance.jsonl', 'snapshot.json', 'report.json'])
      await expect(
        c.client.readResource({ uri: (runUri ?? '').replace('run.json', file) }),
      ).rejects.toThrow(/unknown resource/);
    await expect(
      c.client.readResource({ uri: (runUri ?? '').replace('run.json', '../../etc/passwd') }),
    ).rejects.toThrow(/unknown resource/);

    await c.client.close();
    // The end of the connection is the end of the run: terminal record, nothing left.
    const report = await reportOf(root);
    const dir = report.dir;
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    expect(report.status, c.stderr()).toBe('completed');
    const events = await readEvents(dir);
    const denied = events.find((e) => e.type === 'tool_denied');
    expect(denied?.data).toMatchObject({ tool: 'write_file', status: 'approval_required' });
    const rejected = events.filter((e) => e.type === 'tool_rejected').map((e) => e.data.reason);
    expect(rejected).toEqual(['invalid_arguments', 'unknown_tool', 'unknown_tool']);
    const governance = (await readFile(path.join(dir, 'governance.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    // One governance record per proposal the client made.
    expect(governance).toHaveLength(8);
    const audit = await cfh(['audit', dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  });

  it('with the operator approving the rule, the same write runs', async () => {
    const repo = await scratch.sampleRepo();
    const profile = await scratch.file('profile-approved.yaml', PROFILE);
    const root = scratch.path('art-approved');
    const c = await connect([
      '--profile',
      profile,
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--approve',
      'writes-need-approval',
    ]);
    const write = await call(c.client, 'write_file', { path: 'b.txt', content: 'approved\n' });
    expect(write.obs.status, JSON.stringify(write.obs)).toBe('success');
    await c.client.close();
    expect(await readFile(path.join(repo, 'b.txt'), 'utf8')).toBe('approved\n');
    const { dir, status } = await reportOf(root);
    expect(status).toBe('completed');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });

  it('SIGTERM ends the run as cancelled, with its containers reaped', async () => {
    const repo = await scratch.sampleRepo();
    const profile = await scratch.file('profile-term.yaml', PROFILE);
    const root = scratch.path('art-term');
    const c = await connect(['--profile', profile, '--workspace', repo, '--artifact-root', root]);
    const ran = await call(c.client, 'sandbox_exec', { argv: ['true'] });
    expect(ran.obs.status).toBe('success');
    const pid = c.transport.pid;
    expect(pid).not.toBeNull();
    process.kill(pid ?? 0, 'SIGTERM');
    const { dir, status, reason } = await reportOf(root);
    expect(status).toBe('cancelled');
    expect(reason).toBe('cancelled:SIGTERM');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    await c.client.close();
  });
});
