// The tools `cfh policy explain` knows are the tools a real run advertises, for every kind of
// tool a run can have: the built-ins of each built-in profile, `delegate` (a profile with
// children), host tools (exec and MCP), and a draft session's runs_diff/runs_apply (cfh mcp
// in draft mode). What a run advertises is its snapshot's `tools` and, advertised apart
// (AH-TOOL-7), the host tools it opened (`host_tools_ready`) and a draft session's tools
// (`draft_tools_ready`). Explain's side is the function `policy explain` decides over
// (engine/ops/explain-surface.ts), and the CLI's answer for the kinds it once missed. Class:
// explain built its own surface, so each new kind of tool (host tools, then `delegate` and
// the draft tools) was unknown to it while a run offered it.
import { describe, expect, it } from 'vitest';
import { chmod } from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { surfaceOf } from '../../src/engine/ops/explain-surface.js';
import { runFactsOf } from '../../src/engine/ops/policy-explain.js';
import type { SurfaceFront } from '../../src/engine/agent/tool-surface.js';
import {
  CFH_MAIN,
  REPO_ROOT,
  agentRunArgs,
  baseEnv,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  useScratch,
} from './helpers.js';
import { MEMORY_SERVER, NODE, profileFile } from './host-tools-support.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('surface-parity');
const CHILDREN = path.join(REPO_ROOT, 'examples', 'children', 'parent.yaml');

/** The sample repository, its directory open to the owner a draft is copied as. */
async function repo(): Promise<string> {
  const r = await scratch.sampleRepo();
  await chmod(path.dirname(r), 0o755);
  return r;
}

/** What a finished run advertised: snapshot `tools` and the tools advertised apart. */
async function advertised(runDir: string): Promise<string[]> {
  const snapshot = await readJson<{ tools: string[] }>(path.join(runDir, 'snapshot.json'));
  const apart = (await readEvents(runDir))
    .filter((e) => e.type === 'host_tools_ready' || e.type === 'draft_tools_ready')
    .flatMap((e) => (e.data as { tools: string[] }).tools);
  return [...snapshot.tools, ...apart].sort();
}

/** What explain knows of `front` of a run of `profile` in `workspaceMode`. */
function explained(
  profile: string,
  front: SurfaceFront,
  workspaceMode?: 'direct' | 'draft',
): string[] {
  const loaded = loadProfile(profile).profile;
  const facts = runFactsOf(loaded, workspaceMode === undefined ? {} : { workspaceMode });
  return surfaceOf(loaded, facts, front).names();
}

/** An agent run (`sandbox run --prompt`) of `profile` that answers at once. */
async function agentRun(profile: string, env: Record<string, string> = {}): Promise<string> {
  const root = scratch.path(`art-${path.basename(profile, '.yaml')}-${String(Date.now())}`);
  const r = await cfh(
    agentRunArgs({
      workspace: await repo(),
      artifactRoot: root,
      profile,
      script: await scratch.file('answer.yaml', 'turns:\n  - text: done\n'),
    }),
    { env },
  );
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}

async function explainJson(args: readonly string[]): Promise<Record<string, any>> {
  const r = await cfh(['policy', 'explain', '--json', ...args]);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Record<string, any>;
}

describe('policy explain knows the tools a run advertises', () => {
  it('each built-in profile, a profile with children (a draft), a profile with host tools', async () => {
    const hosted = await profileFile(scratch, 'hosted', {
      tools: ['read_file', 'exec'],
      hostTools: [
        {
          name: 'notify',
          kind: 'exec',
          argv: ['/bin/echo', '{msg}'],
          input: { msg: { type: 'string', pattern: '[a-z]+' } },
          riskClass: 'communication',
          sideEffectClass: 'internal_state_change',
        },
        {
          name: 'memory',
          kind: 'mcp',
          command: NODE,
          args: [MEMORY_SERVER],
          env: { MEMORY_FILE_PATH: { value: scratch.path('graph.jsonl') } },
          tools: [{ name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' }],
        },
      ],
    });
    const cases: { profile: string; mode?: 'draft'; must: string[] }[] = [
      { profile: 'default', must: ['read_file'] },
      { profile: 'untrusted-repo', must: ['exec', 'write_file'] },
      { profile: CHILDREN, mode: 'draft', must: ['delegate'] },
      { profile: hosted, must: ['host__notify', 'mcp__memory__read_graph'] },
    ];
    for (const c of cases) {
      const run = await advertised(await agentRun(c.profile));
      expect(run, c.profile).toEqual(expect.arrayContaining(c.must));
      expect(explained(c.profile, 'agent', c.mode), c.profile).toEqual(run);
    }
    // A session offers what `sandbox run --prompt` offers: `delegate` too.
    const root = scratch.path('art-session');
    const session = new ServeClient([
      '--profile',
      CHILDREN,
      '--workspace',
      await repo(),
      '--artifact-root',
      root,
      '--script',
      await scratch.file('session.yaml', 'turns:\n  - text: done\n'),
    ]);
    const { sessionId } = await session.call('session/open', {});
    await session.call('session/close', { sessionId });
    expect(await session.end()).toBe(0);
    expect(await advertised(await onlyRunDir(root))).toEqual(explained(CHILDREN, 'agent', 'draft'));
  });

  it('a draft session over MCP: runs_diff and runs_apply, and no delegate or host tool', async () => {
    const root = scratch.path('art-mcp');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CFH_MAIN,
        'mcp',
        '--profile',
        'untrusted-repo',
        '--workspace-mode',
        'draft',
        '--workspace',
        await repo(),
        '--artifact-root',
        root,
      ],
      env: baseEnv(),
      cwd: REPO_ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'surface-parity', version: '0.0.1' });
    await client.connect(transport);
    const listed = (await client.listTools()).tools.map((t) =>
      t.name === 'sandbox_exec' ? 'exec' : t.name,
    );
    // The run opens at the first call; the list is what the client may call.
    await client.callTool({ name: 'runs_diff', arguments: {} });
    await client.close();
    let dir: string | undefined;
    for (let i = 0; i < 300 && dir === undefined; i += 1) {
      dir = await onlyRunDir(root)
        .then(async (d) => (await readJson(path.join(d, 'report.json')), d))
        .catch(() => undefined);
      if (dir === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    const run = await advertised(dir ?? '');
    expect(run).toEqual(expect.arrayContaining(['runs_apply', 'runs_diff']));
    expect(listed.sort()).toEqual(run);
    expect(explained('untrusted-repo', 'mcp', 'draft')).toEqual(run);
  });

  it('explains delegate, with its flow under an enforcing profile, and the draft tools', async () => {
    const enforcing = await profileFile(scratch, 'enforcing', {
      tools: ['read_file'],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      children: {
        reviewer: {
          description: 'reads',
          tools: ['read_file'],
          workspace: { mode: 'ro' },
        },
      },
    });
    const d = await explainJson([
      '--profile',
      enforcing,
      'delegate',
      JSON.stringify({ profile: 'reviewer', task: 'review it' }),
    ]);
    expect(d).toMatchObject({ checked: 'valid', offeredBy: ['agent'] });
    expect(d.verdict.rule).not.toBe('unknown_tool');
    expect(d.flow).toMatchObject({
      mode: 'enforce-explicit',
      sinks: [{ sink: 'host tool delegate' }],
    });
    const apply = await explainJson([
      '--profile',
      'untrusted-repo',
      '--workspace-mode',
      'draft',
      'runs_apply',
      JSON.stringify({ patch: 'a'.repeat(64) }),
    ]);
    expect(apply).toMatchObject({
      checked: 'valid',
      offeredBy: ['mcp'],
      verdict: { decision: 'approval_required', rule: 'contract:runs_apply' },
    });
    // A draft profile's runs are drafts without --workspace-mode: so are explain's facts.
    const drafted = await explainJson(['--profile', CHILDREN, 'runs_diff', '{}']);
    expect(drafted).toMatchObject({ facts: { workspaceMode: 'draft' }, offeredBy: ['mcp'] });
    // Not in a direct workspace: no run has it there.
    const direct = await explainJson(['--profile', 'untrusted-repo', 'runs_diff', '{}']);
    expect(direct).toMatchObject({ checked: 'unknown', offeredBy: [] });
  });
});
