// A draft session over MCP (`cfh mcp --workspace-mode draft`), driven by the SDK's client
// against the real engine (governance extension, "Draft vs commit policy"): the client sees
// what the sandbox changed with `runs_diff`, and `runs_apply` commits exactly the changes
// that diff named, only with an approval the operator configured. While cfh reads the copy
// every container of the run is frozen, so a process the sandbox left running cannot swap a
// directory of the copy for a link to the host mid-walk and have cfh read the host.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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

const scratch = useScratch('mcp-draft');

interface Observation {
  status: string;
  summary: string;
  items: string[];
}

async function connect(args: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CFH_MAIN, 'mcp', '--profile', 'untrusted-repo', '--workspace-mode', 'draft', ...args],
    env: baseEnv(),
    cwd: REPO_ROOT,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const client = new Client({ name: 'cfh-draft-client', version: '0.0.1' });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  return r.structuredContent as Observation;
}

async function sh(client: Client, script: string): Promise<Observation> {
  const obs = await call(client, 'sandbox_exec', { argv: ['sh', '-c', script] });
  expect(obs.status, JSON.stringify(obs)).toBe('success');
  return obs;
}

function patchOf(obs: Observation): string {
  const m = /patch ([0-9a-f]{64})/.exec(obs.summary);
  if (m?.[1] === undefined) throw new Error(`no patch digest in ${obs.summary}`);
  return m[1];
}

async function finished(root: string): Promise<string> {
  for (let i = 0; ; i += 1) {
    try {
      const dir = await onlyRunDir(root);
      await readJson(path.join(dir, 'report.json'));
      return dir;
    } catch (error) {
      if (i > 300) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function repoWith(files: Record<string, string>): Promise<string> {
  const repo = await scratch.sampleRepo();
  // As root, an apply writes as the workspace's owner, who must reach it.
  await chmod(path.dirname(repo), 0o755);
  for (const [name, body] of Object.entries(files)) {
    await writeFile(path.join(repo, name), body);
    await ownBySandbox(path.join(repo, name));
  }
  return repo;
}

describe('cfh mcp in workspace mode draft', () => {
  it('runs_diff shows the draft; runs_apply without the operator approval changes nothing', async () => {
    const repo = await repoWith({ 'a.txt': 'alpha\n' });
    const root = scratch.path('art-unapproved');
    const c = await connect(['--workspace', repo, '--artifact-root', root]);
    const tools = (await c.client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['runs_diff', 'runs_apply']));
    const apply = tools.find((t) => t.name === 'runs_apply');
    expect(apply?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(Object.keys(apply?.inputSchema.properties ?? {})).toEqual(['patch']);

    const empty = await call(c.client, 'runs_diff', {});
    expect(empty.summary).toMatch(/^no changes in the draft; patch [0-9a-f]{64}$/);
    await sh(c.client, 'echo beta > a.txt && echo new > n.txt');
    const diff = await call(c.client, 'runs_diff', {});
    expect(diff.status, JSON.stringify(diff)).toBe('success');
    expect(diff.items).toEqual(expect.arrayContaining(['M a.txt', 'A n.txt']));
    expect(diff.items.join('\n')).toContain('-alpha\n+beta');

    // The client asks; only the operator could approve: nothing reaches the host.
    const asked = await call(c.client, 'runs_apply', { patch: patchOf(diff) });
    expect(asked.status).toBe('approval_required');
    expect(asked.summary).toMatch(/contract:runs_apply, args sha256:[0-9a-f]{64}/);
    const bad = await call(c.client, 'runs_apply', { patch: 'HEAD' });
    expect(bad.summary).toContain('invalid arguments');
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('alpha\n');
    expect(await readdir(repo)).not.toContain('n.txt');

    await c.client.close();
    const dir = await finished(root);
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    // The run's own patch still holds both changes, for `cfh runs apply` later.
    const patch = await readJson<{ changes: { path: string }[] }>(
      path.join(dir, 'patch', 'patch.json'),
    );
    expect(patch.changes.map((ch) => ch.path)).toEqual(['a.txt', 'n.txt']);
    const audit = await cfh(['audit', dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  });

  it('with the operator approving runs_apply: exactly the changes the diff named, then only what came after', async () => {
    const repo = await repoWith({ 'a.txt': 'alpha\n' });
    const root = scratch.path('art-approved');
    const c = await connect([
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--approve',
      'contract:runs_apply',
    ]);
    await sh(c.client, 'echo beta > a.txt');
    const first = await call(c.client, 'runs_diff', {});
    // The draft moves on after the diff: the digest names the old changes, so none apply.
    await sh(c.client, 'echo late > late.txt');
    const stale = await call(c.client, 'runs_apply', { patch: patchOf(first) });
    expect(stale.status).toBe('error');
    expect(stale.summary).toContain('patch_changed');
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('alpha\n');

    const now = await call(c.client, 'runs_diff', {});
    expect(now.items).toEqual(expect.arrayContaining(['M a.txt', 'A late.txt']));
    const applied = await call(c.client, 'runs_apply', { patch: patchOf(now) });
    expect(applied.status, JSON.stringify(applied)).toBe('success');
    expect(applied.summary).toMatch(/1 added, 1 modified/);
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('beta\n');
    expect(await readFile(path.join(repo, 'late.txt'), 'utf8')).toBe('late\n');

    // Applied changes are the host's now: the next diff shows only what came after.
    const clean = await call(c.client, 'runs_diff', {});
    expect(clean.summary).toMatch(/^no changes in the draft/);
    await sh(c.client, 'echo after > after.txt');
    const after = await call(c.client, 'runs_diff', {});
    expect(after.items.filter((i) => /^[AMDXL] /.test(i))).toEqual(['A after.txt']);

    await c.client.close();
    const dir = await finished(root);
    const events = await readEvents(dir);
    const live = events.filter((e) => e.type === 'draft_applied');
    expect(live).toHaveLength(1);
    expect(live[0]?.data).toMatchObject({
      paths: ['a.txt', 'late.txt'],
      patch: { sha256: patchOf(now) },
      baseline: { file: 'workspace-baseline.1.json' },
    });
    expect(live[0]?.data.frozen).toBeGreaterThan(0);
    // The approval is the operator's rule, recorded with the call.
    const granted = events.filter(
      (e) => e.type === 'approval_received' && e.data.rule === 'contract:runs_apply',
    );
    expect(granted.map((e) => e.data.outcome)).toEqual(['granted', 'granted']);
    // The run's patch is against the rebased baseline, and `cfh runs apply` takes it.
    const patch = await readJson<{ changes: { path: string }[] }>(
      path.join(dir, 'patch', 'patch.json'),
    );
    expect(patch.changes.map((ch) => ch.path)).toEqual(['after.txt']);
    const audit = await cfh(['audit', dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
    const rest = await cfh(['runs', 'apply', runIdOf(dir), '--artifact-root', root, '--yes']);
    expect(rest.exitCode, rest.stderr).toBe(0);
    expect(await readFile(path.join(repo, 'after.txt'), 'utf8')).toBe('after\n');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });

  it('an --approvals entry approves exactly the changes its digest names, no others', async () => {
    const repo = await repoWith({ 'a.txt': 'alpha\n' });
    const root = scratch.path('art-file');
    // The operator learns the digest from a first session that asked.
    const first = await connect(['--workspace', repo, '--artifact-root', root]);
    await sh(first.client, 'echo beta > a.txt');
    const asked = await call(first.client, 'runs_apply', {
      patch: patchOf(await call(first.client, 'runs_diff', {})),
    });
    await first.client.close();
    const digest = /args (sha256:[0-9a-f]{64})/.exec(asked.summary)?.[1];
    expect(digest, asked.summary).toBeDefined();
    const file = await scratch.file(
      'approvals.yaml',
      `- { rule: contract:runs_apply, tool: runs_apply, argsDigest: '${digest ?? ''}' }\n`,
    );
    // Other changes: another digest, not approved.
    const other = await connect([
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--approvals',
      file,
    ]);
    await sh(other.client, 'echo gamma > a.txt');
    const refused = await call(other.client, 'runs_apply', {
      patch: patchOf(await call(other.client, 'runs_diff', {})),
    });
    expect(refused.status).toBe('approval_required');
    await other.client.close();
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('alpha\n');
    // The same changes: the same digest, approved.
    const same = await connect(['--workspace', repo, '--artifact-root', root, '--approvals', file]);
    await sh(same.client, 'echo beta > a.txt');
    const applied = await call(same.client, 'runs_apply', {
      patch: patchOf(await call(same.client, 'runs_diff', {})),
    });
    expect(applied.status, JSON.stringify(applied)).toBe('success');
    await same.client.close();
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('beta\n');
  });

  it('a process left swapping a directory for a link to the host never makes cfh read the host', async () => {
    const secretDir = scratch.path('host-secret');
    await mkdir(secretDir, { recursive: true });
    const token = `TOPSECRET-${randomBytes(8).toString('hex')}`;
    await writeFile(path.join(secretDir, 'f'), `${token}\n`, { mode: 0o644 });
    await chmod(secretDir, 0o755);
    const repo = await repoWith({});
    await mkdir(path.join(repo, 'd'));
    await writeFile(path.join(repo, 'd', 'f'), 'plain\n');
    await ownBySandbox(path.join(repo, 'd'));
    await ownBySandbox(path.join(repo, 'd', 'f'));
    const root = scratch.path('art-swap');
    const c = await connect([
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--approve',
      'contract:runs_apply',
    ]);
    // Left running after the call: `d` flips between the directory and a link whose target,
    // meaningless in the container, is the secret directory on the host.
    await sh(
      c.client,
      `(while :; do mv d d.real && ln -s ${secretDir} d && rm d && mv d.real d; done) </dev/null >/dev/null 2>&1 & echo started`,
    );
    const seen: string[] = [];
    for (let i = 0; i < 15; i += 1) {
      const diff = await call(c.client, 'runs_diff', {});
      expect(diff.status, JSON.stringify(diff)).toBe('success');
      seen.push(diff.items.join('\n'));
      if (i % 5 === 4) {
        // An apply walks the copy too, then writes the host from what it kept.
        const applied = await call(c.client, 'runs_apply', { patch: patchOf(diff) });
        seen.push(JSON.stringify(applied));
      }
    }
    await c.client.close();
    const dir = await finished(root);
    expect(seen.join('\n')).not.toContain(token);
    // Nothing of the host's secret was kept in the evidence either.
    const blobs = path.join(dir, 'patch', 'blobs');
    for (const b of await readdir(blobs).catch(() => [])) {
      expect(await readFile(path.join(blobs, b), 'utf8')).not.toContain(token);
    }
    expect(await readdir(repo)).not.toContain('f');
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});
