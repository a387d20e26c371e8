// The boundary, round 3: the classes an independent review broke, each through the real CLI,
// engine and Docker, each named in its title (docs/conformance.md, "CFC"):
//   1. a model context carried over a boundary keeps its label (restore, delegation, a plan,
//      resume);
//   2. an opaque observation answers no question (grep's match, edit_file's success, exec's
//      status);
//   3. digests of hidden values: a refusal's digest is of what the model sent;
//   4. a handle used as an argument leaks nothing through the file tools;
//   5. a host tool's result carries its inputs' labels, unless the operator declares it a
//      declassifier.
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { canonicalJson } from '../../src/evidence/canonical-json.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  agentRunArgs,
  baseEnv,
  CFH_MAIN,
  cfh,
  copySampleRepo,
  onlyRunDir,
  ownBySandbox,
  readEvents,
  REPO_ROOT,
  toolResults,
  useScratch,
  type Event,
} from './helpers.js';
import { NODE } from './host-tools-support.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('cfc-round3');
const SECRET = 'hunter2-0f3a9c';
const HANDLE = /cfh-val:[a-z2-7]{20}/;
const call = (name: string, input: unknown) => ({ name, input });

type Mode = 'enforce-explicit' | 'enforce-strict';
const MODES: readonly Mode[] = ['enforce-explicit', 'enforce-strict'];

/** A secrets directory (readable by the sandbox user) and a workspace of its own. */
async function setUp(name: string): Promise<{ repo: string; secrets: string }> {
  const repo = await copySampleRepo(scratch.path(`${name}-repo`));
  const secrets = scratch.path(`${name}-secrets`);
  await mkdir(secrets, { mode: 0o755 });
  await writeFile(path.join(secrets, 'x'), `${SECRET}\n`, { mode: 0o644 });
  return { repo, secrets };
}

function profileYaml(o: Record<string, unknown>): string {
  return stringify({ extends: 'untrusted-repo', ...o });
}

async function runAgent(
  name: string,
  profile: Record<string, unknown>,
  turns: unknown[][],
  repo: string,
  extra: string[] = [],
): Promise<{ exitCode: number; stderr: string; dir: string; events: Event[] }> {
  const p = await scratch.file(`${name}.yaml`, profileYaml({ name, ...profile }));
  const s = await scratch.file(
    `${name}-script.yaml`,
    stringify({ turns: [...turns.map((c) => ({ tool_calls: c })), { text: 'done' }] }),
  );
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs({ workspace: repo, artifactRoot: root, profile: p, script: s }, [
      '--non-interactive',
      ...extra,
    ]),
  );
  if (r.exitCode === 125) throw new Error(`${name} refused: ${r.stderr}`);
  const dir = await onlyRunDir(root);
  return { exitCode: r.exitCode, stderr: r.stderr, dir, events: await readEvents(dir) };
}

const flows = (events: Event[]) =>
  events
    .filter((e) => e.type === 'cfc_flow')
    .map((e) => e.data as { callId: string; verdict: string; rule: string; tool: string });

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

async function auditOk(dir: string): Promise<void> {
  const a = await cfh(['audit', dir]);
  const failing = a.stdout.split('\n').filter((l) => /fail|^\s+at /i.test(l));
  expect(a.exitCode, [...failing, a.stderr].join('\n')).toBe(0);
}

describe('class 1: a model context carried over a boundary keeps its label', () => {
  const cleared = (secrets: string, mode: Mode) => ({
    cfc: { mode, modelClearance: ['secret'] },
    workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
    mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
  });

  it('session/restore: a write refused before the restore is refused after it', async () => {
    const { repo, secrets } = await setUp('restore');
    const profile = await scratch.file(
      'restore.yaml',
      profileYaml({ name: 'restore', ...cleared(secrets, 'enforce-explicit') }),
    );
    const script = await scratch.file(
      'restore-script.yaml',
      stringify({
        turns: [
          { tool_calls: [call('read_file', { path: '/secrets/x' })] },
          { tool_calls: [call('write_file', { path: 'before.txt', content: 'leak' })] },
          { text: 'one' },
        ],
      }),
    );
    const root = scratch.path('art-restore');
    const args = ['--profile', profile, '--workspace', repo, '--artifact-root', root];
    const first = new ServeClient([...args, '--script', script]);
    // The caller refuses what is asked: only the flow gate decides.
    const deny = (m: { params?: Record<string, unknown> }) => ({
      answer: 'deny',
      argsDigest: m.params?.argsDigest,
    });
    first.onApproval = deny;
    const opened = await first.call('session/open', {});
    const sessionId = String(opened.sessionId);
    expect(await first.turn(sessionId, 'read it')).toMatchObject({ status: 'answered' });
    await first.call('session/close', { sessionId });
    expect(await first.end()).toBe(0);
    expect(await exists(path.join(repo, 'before.txt'))).toBe(false);

    await writeFile(
      script,
      stringify({
        turns: [
          { tool_calls: [call('write_file', { path: 'after.txt', content: 'leak' })] },
          { text: 'two' },
        ],
      }),
    );
    const next = new ServeClient([...args, '--script', script]);
    next.onApproval = deny;
    const restored = await next.call('session/restore', { sessionId });
    expect(await next.turn(sessionId, 'write it')).toMatchObject({ status: 'answered' });
    await next.call('session/close', { sessionId });
    expect(await next.end()).toBe(0);
    expect(await exists(path.join(repo, 'after.txt'))).toBe(false);
    const events = await readEvents(String(restored.runDir));
    expect(events.find((e) => e.type === 'cfc_carried')?.data).toMatchObject({
      kind: 'restore',
      label: { confidentiality: ['secret'] },
      basis: 'recorded',
    });
    expect(flows(events)).toEqual([
      expect.objectContaining({ tool: 'write_file', verdict: 'deny', rule: 'cfc:clearance' }),
    ]);
    await auditOk(String(restored.runDir));
  }, 240_000);

  it.each(MODES)(
    'delegation: a child handed a refused write is refused it too, with and without a ceiling (%s)',
    async (mode) => {
      const { repo, secrets } = await setUp(`deleg-${mode}`);
      for (const ceiling of [false, true]) {
        const child = {
          description: 'writes notes',
          tools: ['write_file'],
          workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
          cfc: { modelClearance: ['secret'] },
          ...(ceiling ? { ceiling: { confidentiality: ['secret'] } } : {}),
          budgets: { maxModelTurns: 3 },
        };
        const name = `deleg-${mode}-${String(ceiling)}`;
        const p = await scratch.file(
          `${name}.yaml`,
          profileYaml({
            name,
            ...cleared(secrets, mode),
            tools: ['read_file', 'write_file'],
            children: { writer: child },
          }),
        );
        const s = await scratch.file(
          `${name}-script.yaml`,
          stringify({
            turns: [
              { tool_calls: [call('read_file', { path: '/secrets/x' })] },
              { tool_calls: [call('write_file', { path: 'parent.txt', content: 'leak' })] },
              { tool_calls: [call('delegate', { profile: 'writer', task: 'write child.txt' })] },
              { text: 'done' },
            ],
            children: {
              writer: {
                turns: [
                  { tool_calls: [call('write_file', { path: 'child.txt', content: 'leak' })] },
                  { text: 'wrote it' },
                ],
              },
            },
          }),
        );
        const root = scratch.path(`art-${name}`);
        const r = await cfh(
          agentRunArgs({ workspace: repo, artifactRoot: root, profile: p, script: s }, [
            '--non-interactive',
          ]),
        );
        expect(r.exitCode, r.stderr).toBe(0);
        expect(await exists(path.join(repo, 'parent.txt'))).toBe(false);
        expect(await exists(path.join(repo, 'child.txt'))).toBe(false);
        const dir = await onlyRunDir(root);
        const started = (await readEvents(dir)).find((e) => e.type === 'child_started');
        const childDir = path.join(dir, (started?.data as { dir: string }).dir);
        const childEvents = await readEvents(childDir);
        expect(childEvents.find((e) => e.type === 'cfc_carried')?.data).toMatchObject({
          kind: 'delegation',
          label: { confidentiality: ['secret'] },
        });
        expect(flows(childEvents)).toEqual([
          expect.objectContaining({ tool: 'write_file', verdict: 'deny', rule: 'cfc:clearance' }),
        ]);
        await auditOk(dir);
      }
    },
    300_000,
  );

  it('a plan: a secret read while planning is not written by the run executing the plan', async () => {
    const { repo, secrets } = await setUp('plan');
    const profile = { ...cleared(secrets, 'enforce-explicit'), tools: ['read_file', 'write_file'] };
    const planning = await runAgent(
      'plan-1',
      profile,
      [[call('read_file', { path: '/secrets/x' })]],
      repo,
      ['--plan'],
    );
    expect(planning.exitCode, planning.stderr).toBe(0);
    const planId = path.basename(planning.dir);
    const p = await scratch.file('plan-2.yaml', profileYaml({ name: 'plan-2', ...profile }));
    const s = await scratch.file(
      'plan-2-script.yaml',
      stringify({
        turns: [
          { tool_calls: [call('write_file', { path: 'planned.txt', content: 'leak' })] },
          { text: 'done' },
        ],
      }),
    );
    // The plan's own approval is given: what stops the write is the plan's label.
    const r = await cfh(
      agentRunArgs(
        { workspace: repo, artifactRoot: path.dirname(planning.dir), profile: p, script: s },
        ['--from-plan', planId, '--approve', 'from_plan', '--non-interactive', '--json'],
      ),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await exists(path.join(repo, 'planned.txt'))).toBe(false);
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const events = await readEvents(path.join(path.dirname(planning.dir), runId));
    expect(events.find((e) => e.type === 'cfc_carried')?.data).toMatchObject({
      kind: 'plan',
      fromRunId: planId,
      label: { confidentiality: ['secret'] },
    });
    expect(flows(events)[0]).toMatchObject({ verdict: 'deny', rule: 'cfc:clearance' });
  }, 240_000);

  it("resume: the old context's handles resolve to the same values; another run's are inert", async () => {
    const { repo, secrets } = await setUp('resume');
    const vault = scratch.path('resume-vault');
    await mkdir(vault, { mode: 0o777 });
    await chmod(vault, 0o777);
    const profile = {
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      workspace: { mode: 'ro', label: { integrity: ['repo:untrusted'] } },
      tools: ['read_file', 'write_file'],
      mounts: [
        { source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } },
        { source: vault, target: '/vault', mode: 'rw', label: { confidentiality: ['secret'] } },
      ],
    };
    const first = await runAgent(
      'resume-1',
      profile,
      [[call('read_file', { path: '/secrets/x' })]],
      repo,
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const other = await runAgent(
      'resume-other',
      profile,
      [[call('read_file', { path: '/secrets/x' })]],
      repo,
    );
    const otherHandle = JSON.stringify(await toolResults(other.dir)).match(HANDLE)?.[0] ?? '';
    expect(otherHandle).toMatch(HANDLE);
    const s = await scratch.file(
      'resume-2-script.yaml',
      stringify({
        turns: [
          { tool_calls: [call('write_file', { path: '/vault/kept', content: '{{handle:1}}' })] },
          { tool_calls: [call('write_file', { path: '/vault/other', content: otherHandle })] },
          { text: 'done' },
        ],
      }),
    );
    const root = path.dirname(first.dir);
    const r = await cfh([
      'sandbox',
      'resume',
      path.basename(first.dir),
      '--artifact-root',
      root,
      '--script',
      s,
      '--json',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    // The same referent: the value read in the first run, written where it is cleared.
    expect(await readFile(path.join(vault, 'kept'), 'utf8')).toBe(`${SECRET}\n`);
    // Another run's handle is not this lineage's: the call is invalid, nothing written.
    expect(await exists(path.join(vault, 'other'))).toBe(false);
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const events = await readEvents(path.join(root, runId));
    const oldHandle = JSON.stringify(await toolResults(first.dir)).match(HANDLE)?.[0];
    // Held again under its own name; resolved by the write; the write's own result (it
    // carries the secret) is held as a new handle of this run.
    expect(events.filter((e) => e.type === 'cfc_handle').map((e) => e.data)).toEqual([
      expect.objectContaining({
        action: 'inherited',
        handle: oldHandle,
        fromRunId: path.basename(first.dir),
      }),
      expect.objectContaining({ action: 'resolved', handle: oldHandle, callId: 'call-0001' }),
      expect.objectContaining({ action: 'minted', callId: 'call-0001' }),
    ]);
    await auditOk(path.join(root, runId));
  }, 240_000);
});

describe('class 2: an opaque observation answers no question', () => {
  it.each(MODES)(
    "grep's match, edit_file's success and exec's status give one shape (%s)",
    async (mode) => {
      const { repo, secrets } = await setUp(`oracle-${mode}`);
      await ownBySandbox(path.join(secrets, 'x'));
      await ownBySandbox(secrets);
      const r = await runAgent(
        `oracle-${mode}`,
        {
          cfc: { mode, modelClearance: [] },
          // Read-only workspace, no network: exec's container may hold the secret.
          workspace: { mode: 'ro', label: { integrity: ['repo:untrusted'] } },
          tools: ['grep', 'edit_file', 'exec'],
          mounts: [
            {
              source: secrets,
              target: '/secrets',
              mode: 'rw',
              label: { confidentiality: ['secret'] },
            },
          ],
        },
        [
          [call('grep', { pattern: 'hunter2', path: '/secrets' })],
          [call('grep', { pattern: 'zzzzzzz', path: '/secrets' })],
          [call('edit_file', { path: '/secrets/x', old_string: 'nomatch', new_string: 'a' })],
          [call('edit_file', { path: '/secrets/x', old_string: 'hunter2', new_string: 'hunter2' })],
          [call('exec', { command: ['grep', '-q', 'hunter2', '/secrets/x'] })],
          [call('exec', { command: ['grep', '-q', 'zzzzzzz', '/secrets/x'] })],
        ],
        repo,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const shapes = (await toolResults(r.dir)).map((t) =>
        JSON.stringify(t.observation).replaceAll(new RegExp(HANDLE, 'g'), 'H'),
      );
      expect(shapes).toHaveLength(6);
      // Each pair differed in what the call found; the model sees the same thing.
      expect(new Set(shapes).size, shapes.join('\n')).toBe(1);
      const transcript = await readFile(path.join(r.dir, 'transcript.jsonl'), 'utf8');
      expect(transcript).not.toContain(SECRET);
      expect(transcript).not.toMatch(/"is_error":true/);
      // The evidence keeps what happened (operator side): each pair did differ.
      const executed = r.events
        .filter((e) => e.type === 'tool_executed')
        .map((e) => e.data as { status: string; exitCode: number | null });
      const outcome = (i: number) => JSON.stringify([executed[i]?.status, executed[i]?.exitCode]);
      const outputs = await Promise.all(
        ['call-0001', 'call-0002'].map((c) =>
          readFile(path.join(r.dir, 'outputs', `${c}.stdout`), 'utf8').catch(() => ''),
        ),
      );
      expect(outputs[0]).toContain(SECRET);
      expect(outputs[1]).not.toContain(SECRET);
      expect(outcome(2), JSON.stringify(executed)).not.toBe(outcome(3));
      expect(outcome(4), JSON.stringify(executed)).not.toBe(outcome(5));
    },
    240_000,
  );
});

describe('class 3 and 4: handles leak neither through digests nor through file tools', () => {
  it.each(MODES)(
    "a refusal's digest is of the handle form; a handle as grep's path or pattern shows nothing (%s)",
    async (mode) => {
      const { repo, secrets } = await setUp(`h34-${mode}`);
      const r = await runAgent(
        `h34-${mode}`,
        {
          cfc: { mode, modelClearance: [] },
          workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
          tools: ['read_file', 'grep', 'write_file'],
          mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
        },
        [
          [call('read_file', { path: '/secrets/x' })],
          [call('write_file', { path: 'out.txt', content: 'v={{handle:1}}' })],
          [call('grep', { pattern: 'x', path: '{{handle:1}}' })],
          [call('grep', { pattern: '{{handle:1}}', path: '.' })],
        ],
        repo,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const results = await toolResults(r.dir);
      const handle = results[0]?.observation.items[0] ?? '';
      expect(handle).toMatch(HANDLE);
      // The model's text names the call whose permission_decision holds the digest (a digest
      // over run-salted handle names would differ run to run: AH-REF-4); the evidence has it.
      const refusal = results[1]?.observation.summary ?? '';
      const named = /args the argsDigest of (call-\d+)'s permission_decision/.exec(refusal)?.[1];
      expect(named, refusal).toBeDefined();
      const decision = r.events.find(
        (e) => e.type === 'permission_decision' && e.data.call_id === named,
      );
      const digest = decision?.data.args_digest;
      const d = (args: unknown) =>
        `sha256:${createHash('sha256')
          .update(canonicalJson({ tool: 'write_file', args }))
          .digest('hex')}`;
      expect(digest).toBe(d({ path: 'out.txt', content: `v=${handle}` }));
      expect(digest).not.toBe(d({ path: 'out.txt', content: `v=${SECRET}\n` }));
      // Both greps ran on the value; the model gets handles, never the value or an error of it.
      for (const g of results.slice(2)) expect(g.observation.items[0]).toMatch(HANDLE);
      const transcript = await readFile(path.join(r.dir, 'transcript.jsonl'), 'utf8');
      expect(transcript).not.toContain('hunter2');
      expect(await exists(path.join(repo, 'out.txt'))).toBe(false);
      await auditOk(r.dir);
    },
    240_000,
  );
});

describe('class 5: a host tool result carries its inputs', () => {
  it.each(MODES)(
    'an echoing tool cleared for the secret hands back a handle; a declared declassifier its text (%s)',
    async (mode) => {
      const { repo, secrets } = await setUp(`host5-${mode}`);
      const echo = (name: string, declassifies: boolean) => ({
        kind: 'exec',
        name,
        description: 'checks a token and says what it checked',
        argv: [NODE, '-e', 'console.log("checked " + process.argv[1])', '{token}'],
        input: { token: { type: 'string', pattern: '[A-Za-z0-9:\\n-]{1,200}', maxLength: 200 } },
        riskClass: 'read_only',
        sideEffectClass: 'none',
        resourceScope: 'project',
        resultLabel: { integrity: ['checker'] },
        clearance: ['secret'],
        ...(declassifies ? { declassifies: true } : {}),
      });
      const r = await runAgent(
        `host5-${mode}`,
        {
          cfc: { mode, modelClearance: [] },
          workspace: { mode: 'ro', label: { integrity: ['repo:untrusted'] } },
          tools: ['read_file'],
          mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
          hostTools: [echo('check', false), echo('count', true)],
          policy: [{ id: 'hosts', match: { tool: 'host__*' }, decision: 'allow', reason: 'test' }],
        },
        [
          [call('read_file', { path: '/secrets/x' })],
          [call('host__check', { token: '{{handle:1}}' })],
          [call('host__count', { token: '{{handle:1}}' })],
        ],
        repo,
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const results = await toolResults(r.dir);
      expect(results[1]?.observation.items[0], JSON.stringify(results[1])).toMatch(HANDLE);
      // The operator's declassifier: its word, recorded at the call.
      expect(JSON.stringify(results[2]?.observation)).toContain(`checked ${SECRET}`);
      expect(r.events.find((e) => e.type === 'cfc_declassified')?.data).toMatchObject({
        callId: 'call-0003',
        tool: 'host__count',
        inputs: { confidentiality: ['secret'] },
        by: 'profile',
      });
      await auditOk(r.dir);
    },
    240_000,
  );
});

describe("utility: an operator's secret passed as a handle costs no integrity", () => {
  it('enforce-strict: "deploy with the token" runs from the direct command, not after untrusted text', async () => {
    const { repo, secrets } = await setUp('deploy');
    const record = await scratch.file(
      'record.mjs',
      "import { appendFileSync } from 'node:fs';\nappendFileSync(process.argv[2], process.argv[3] + '\\n');\nconsole.log('deployed');\n",
    );
    const log = scratch.path('deployed.log');
    const profile = {
      cfc: { mode: 'enforce-strict', modelClearance: [] },
      workspace: { mode: 'ro', label: { integrity: ['repo:untrusted'] } },
      tools: ['read_file'],
      mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
      hostTools: [
        {
          kind: 'exec',
          name: 'deploy',
          description: 'deploys with a token',
          argv: [NODE, record, log, '{token}'],
          input: { token: { type: 'string', pattern: '[A-Za-z0-9\\n-]{1,200}', maxLength: 200 } },
          riskClass: 'write_external',
          sideEffectClass: 'external_commitment',
          resourceScope: 'external',
          resultLabel: { integrity: ['deploy'] },
          clearance: ['secret'],
        },
      ],
    };
    // Policy's own question is answered: only the flow decides here.
    const approve = ['--approve', 'default:write_external'];
    const clean = await runAgent(
      'deploy-clean',
      profile,
      [
        [call('read_file', { path: '/secrets/x' })],
        [call('host__deploy', { token: '{{handle:1}}' })],
      ],
      repo,
      approve,
    );
    expect(clean.exitCode, clean.stderr).toBe(0);
    expect(flows(clean.events).map((f) => f.verdict)).toEqual(['allow', 'allow']);
    expect(await readFile(log, 'utf8')).toBe(`${SECRET}\n\n`);
    // The same after the model read the repository: the influence lost prompt:direct.
    const tainted = await runAgent(
      'deploy-tainted',
      profile,
      [
        [call('read_file', { path: 'calc.py' })],
        [call('read_file', { path: '/secrets/x' })],
        [call('host__deploy', { token: '{{handle:1}}' })],
      ],
      repo,
      approve,
    );
    expect(tainted.exitCode, tainted.stderr).toBe(0);
    expect(flows(tainted.events).at(-1)).toMatchObject({ verdict: 'deny', rule: 'cfc:integrity' });
    const refusal = (await toolResults(tainted.dir)).at(-1)?.observation.summary ?? '';
    // Every refusal tells the operator how to endorse it, exactly.
    expect(refusal).toMatch(
      /--approve cfc:integrity .* an --approvals entry \{rule: cfc:integrity, tool: host__deploy, argsDigest: the argsDigest of call-\d+'s permission_decision\}/,
    );
    expect(await readFile(log, 'utf8')).toBe(`${SECRET}\n\n`);
  }, 240_000);
});

describe('class 1: one context label for every path that continues a context', () => {
  const cleared = (secrets: string) => ({
    cfc: { mode: 'enforce-explicit', modelClearance: ['secret'] },
    workspace: { mode: 'rw', label: { integrity: ['repo:untrusted'] } },
    tools: ['read_file', 'write_file', 'list_dir'],
    mounts: [{ source: secrets, target: '/secrets', label: { confidentiality: ['secret'] } }],
  });

  it('resume: the resumed run starts at the old context label', async () => {
    const { repo, secrets } = await setUp('resume-label');
    const first = await runAgent(
      'resume-label-1',
      cleared(secrets),
      [[call('read_file', { path: '/secrets/x' })]],
      repo,
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const s = await scratch.file(
      'resume-label-2.yaml',
      stringify({
        turns: [
          { tool_calls: [call('write_file', { path: 'resumed.txt', content: 'leak' })] },
          { text: 'done' },
        ],
      }),
    );
    const root = path.dirname(first.dir);
    const r = await cfh([
      'sandbox',
      'resume',
      path.basename(first.dir),
      '--artifact-root',
      root,
      '--script',
      s,
      '--json',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await exists(path.join(repo, 'resumed.txt'))).toBe(false);
    const events = await readEvents(
      path.join(root, (JSON.parse(r.stdout) as { runId: string }).runId),
    );
    expect(events.find((e) => e.type === 'cfc_carried')?.data).toMatchObject({
      kind: 'resume',
      label: { confidentiality: ['secret'] },
    });
    expect(flows(events)[0]).toMatchObject({ verdict: 'deny', rule: 'cfc:clearance' });
  }, 240_000);

  it('compaction: the summary replaces the context, never its label', async () => {
    const { repo, secrets } = await setUp('compact');
    const p = await scratch.file(
      'compact.yaml',
      profileYaml({ name: 'compact', context: { compactAt: 5000 }, ...cleared(secrets) }),
    );
    const s = await scratch.file(
      'compact-script.yaml',
      stringify({
        model: 'scripted-long',
        turns: [
          {
            tool_calls: [call('read_file', { path: '/secrets/x' })],
            usage: { input_tokens: 2000, output_tokens: 10 },
          },
          {
            tool_calls: [call('list_dir', { path: '.' })],
            usage: { input_tokens: 6000, output_tokens: 10 },
          },
          {
            tool_calls: [call('write_file', { path: 'compacted.txt', content: 'leak' })],
            usage: { input_tokens: 1500, output_tokens: 10 },
          },
          { text: 'done', usage: { input_tokens: 1600, output_tokens: 5 } },
        ],
        compactions: [{ summary: 'Read the secret, listed the workspace.' }],
      }),
    );
    const root = scratch.path('art-compact');
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: p, script: s }, [
        '--non-interactive',
      ]),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const events = await readEvents(await onlyRunDir(root));
    expect(events.some((e) => e.type === 'compaction_completed')).toBe(true);
    expect(await exists(path.join(repo, 'compacted.txt'))).toBe(false);
    expect(flows(events).at(-1)).toMatchObject({ verdict: 'deny', rule: 'cfc:clearance' });
  }, 240_000);

  it('serve turns: what one turn read, the next turn carries', async () => {
    const { repo, secrets } = await setUp('turns');
    const profile = await scratch.file(
      'turns.yaml',
      profileYaml({ name: 'turns', ...cleared(secrets) }),
    );
    const script = await scratch.file(
      'turns-script.yaml',
      stringify({
        turns: [
          { tool_calls: [call('read_file', { path: '/secrets/x' })] },
          { text: 'read' },
          { tool_calls: [call('write_file', { path: 'turn2.txt', content: 'leak' })] },
          { text: 'wrote' },
        ],
      }),
    );
    const root = scratch.path('art-turns');
    const client = new ServeClient([
      '--profile',
      profile,
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--script',
      script,
    ]);
    client.onApproval = (m: { params?: Record<string, unknown> }) => ({
      answer: 'deny',
      argsDigest: m.params?.argsDigest,
    });
    const opened = await client.call('session/open', {});
    const sessionId = String(opened.sessionId);
    expect(await client.turn(sessionId, 'read it')).toMatchObject({ status: 'answered' });
    expect(await client.turn(sessionId, 'now write')).toMatchObject({ status: 'answered' });
    await client.call('session/close', { sessionId });
    expect(await client.end()).toBe(0);
    expect(await exists(path.join(repo, 'turn2.txt'))).toBe(false);
    const events = await readEvents(String(opened.runDir));
    expect(flows(events).at(-1)).toMatchObject({ verdict: 'deny', rule: 'cfc:clearance' });
  }, 240_000);

  it('cfh mcp: what the client was shown, its next call carries', async () => {
    const { repo, secrets } = await setUp('mcp');
    const profile = await scratch.file(
      'mcp.yaml',
      profileYaml({ name: 'mcp', ...cleared(secrets) }),
    );
    const root = scratch.path('art-mcp');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CFH_MAIN, 'mcp', '--profile', profile, '--workspace', repo, '--artifact-root', root],
      env: baseEnv(),
      cwd: REPO_ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'round3', version: '1' });
    await client.connect(transport);
    const read = await client.callTool({ name: 'read_file', arguments: { path: '/secrets/x' } });
    expect(JSON.stringify(read)).toContain(SECRET);
    const write = await client.callTool({
      name: 'write_file',
      arguments: { path: 'mcp.txt', content: 'leak' },
    });
    expect(write.isError).toBe(true);
    expect(JSON.stringify(write)).toContain('cfc:clearance');
    await client.close();
    expect(await exists(path.join(repo, 'mcp.txt'))).toBe(false);
  }, 240_000);
});
