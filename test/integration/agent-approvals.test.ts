// Approvals without a terminal, through the real CLI and real containers (governance
// extension, "pause for human approval"): with nobody to ask, a call that needs approval is
// answered `approval_required` and nothing of it runs, and the run goes on; an approvals
// file approves exactly the calls it lists (a changed argument is a new digest, a new
// question); `--approve RULE` approves every call that rule asks about; a bad approvals
// setup is refused with 125 before anything starts.
import { describe, expect, it } from 'vitest';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  toolResults,
  useScratch,
} from './helpers.js';
import {
  ASKING_PROFILE,
  eventsOf,
  execDigest,
  execScript,
  expectOneDecisionBeforeExecution,
  repoWith,
} from './approval-support.js';

const scratch = useScratch('agent-approvals');

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function run(name: string, commands: string[][], extra: string[] = [], files = ['a.txt']) {
  const repo = await repoWith(scratch, files);
  const profile = await scratch.file(`${name}-profile.yaml`, ASKING_PROFILE);
  const script = await scratch.file(`${name}.yaml`, execScript(commands));
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }, extra),
  );
  return { r, repo, root };
}

describe('approvals with nobody to ask', () => {
  it('answers approval_required, runs nothing of the call, and the run goes on to complete', async () => {
    const { r, repo, root } = await run('nobody', [
      ['rm', 'a.txt'],
      ['ls', 'a.txt'],
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    // cfh never prompted: stderr is not a terminal here.
    expect(r.stderr).not.toContain('approval needed');
    expect(await exists(path.join(repo, 'a.txt'))).toBe(true);
    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    const decisions = expectOneDecisionBeforeExecution(events);
    expect(decisions.get('call-0001')).toMatchObject({
      decision: 'approval_required',
      policy_rule: 'rm-needs-approval',
      args_digest: execDigest(['rm', 'a.txt']),
      approver: null,
    });
    expect(eventsOf(events, 'call-0001', 'tool_executed')).toEqual([]);
    expect(eventsOf(events, 'call-0001', 'tool_denied')[0]?.data).toMatchObject({
      status: 'approval_required',
      rule: 'rm-needs-approval',
    });
    expect(eventsOf(events, 'call-0001', 'approval_requested')[0]?.data).toMatchObject({
      approvers: [],
      argsDigest: execDigest(['rm', 'a.txt']),
    });
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data).toMatchObject({
      outcome: 'unavailable',
      approver: null,
    });
    // The run went on: the next call ran.
    expect(eventsOf(events, 'call-0002', 'tool_executed')[0]?.data).toMatchObject({
      status: 'success',
    });
    // The model was told, as a typed observation naming the rule and the digest.
    const [first] = await toolResults(dir);
    expect(first?.observation.status).toBe('approval_required');
    expect(first?.observation.summary).toContain('rm-needs-approval');
    expect(first?.observation.summary).toContain(execDigest(['rm', 'a.txt']));
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.approvals).toMatchObject({
      interactive: false,
      preApprovedRules: [],
      file: null,
      surfaces: [],
    });
    expect(snapshot.approvals.notInteractiveBecause).toContain('no terminal');
  });
});

describe('an approvals file', () => {
  it('approves exactly the listed call and not its modified variant; digests in the evidence', async () => {
    const approved = ['rm', 'a.txt'];
    const variant = ['rm', 'a.txt', 'b.txt'];
    const list = await scratch.file(
      'approvals.yaml',
      `- rule: rm-needs-approval\n  tool: exec\n  argsDigest: ${execDigest(approved)}\n`,
    );
    const { r, repo, root } = await run(
      'file',
      [approved, variant],
      ['--approvals', list],
      ['a.txt', 'b.txt'],
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await exists(path.join(repo, 'a.txt'))).toBe(false);
    expect(await exists(path.join(repo, 'b.txt'))).toBe(true);
    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    const decisions = expectOneDecisionBeforeExecution(events);
    expect(decisions.get('call-0001')?.args_digest).toBe(execDigest(approved));
    expect(decisions.get('call-0002')?.args_digest).toBe(execDigest(variant));
    expect(eventsOf(events, 'call-0001', 'approval_received')[0]?.data).toMatchObject({
      outcome: 'granted',
      scope: 'call',
      approver: { kind: 'human', surface: 'file' },
      argsDigest: execDigest(approved),
    });
    expect(eventsOf(events, 'call-0001', 'tool_executed')[0]?.data).toMatchObject({
      status: 'success',
    });
    expect(eventsOf(events, 'call-0002', 'approval_received')[0]?.data).toMatchObject({
      outcome: 'unavailable',
      argsDigest: execDigest(variant),
    });
    expect(eventsOf(events, 'call-0002', 'tool_executed')).toEqual([]);
    // The governance record names the person who approved the call that ran.
    const governance = (await readJsonLines(path.join(dir, 'governance.jsonl'))) as {
      call_id: string;
      decision: Record<string, unknown>;
      side_effect_committed: boolean;
    }[];
    expect(
      governance.map((g) => [g.call_id, g.decision.decided_by, g.side_effect_committed]),
    ).toEqual([
      ['call-0001', 'human', true],
      ['call-0002', 'policy', false],
    ]);
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.approvals.file).toMatchObject({ path: list, calls: 1 });
    expect(snapshot.approvals.file.sha256).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(snapshot.approvals.surfaces).toEqual(['file']);
  });
});

describe('--approve RULE_ID', () => {
  it('approves every call that rule asks about, for this run, and nothing another rule asks', async () => {
    const { r, repo, root } = await run(
      'rule',
      [
        ['rm', 'a.txt'],
        ['rm', 'b.txt'],
        ['touch', 'c.txt'],
      ],
      ['--approve', 'rm-needs-approval'],
      ['a.txt', 'b.txt'],
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await exists(path.join(repo, 'a.txt'))).toBe(false);
    expect(await exists(path.join(repo, 'b.txt'))).toBe(false);
    // touch asks for stronger authentication: a rule approval never gives it.
    expect(await exists(path.join(repo, 'c.txt'))).toBe(false);
    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    expectOneDecisionBeforeExecution(events);
    for (const id of ['call-0001', 'call-0002']) {
      expect(eventsOf(events, id, 'approval_received')[0]?.data).toMatchObject({
        outcome: 'granted',
        scope: 'rule',
        approver: { kind: 'human', surface: 'flag' },
      });
    }
    expect(eventsOf(events, 'call-0003', 'permission_decision')[0]?.data.decision).toBe(
      'require_stronger_auth',
    );
    expect(eventsOf(events, 'call-0003', 'approval_received')[0]?.data.outcome).toBe('unavailable');
    const snapshot = await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'));
    expect(snapshot.approvals).toMatchObject({
      preApprovedRules: ['rm-needs-approval'],
      surfaces: ['flag'],
    });
  });
});

describe('a bad approvals setup is refused before anything starts', () => {
  it('exits 125 for a bad file, an unknown or never-asking rule, and approval flags without --prompt', async () => {
    const repo = await repoWith(scratch, []);
    const profile = await scratch.file('refuse-profile.yaml', ASKING_PROFILE);
    const script = await scratch.file('refuse.yaml', execScript([['rm', 'a.txt']]));
    const root = scratch.path('art-refuse');
    const base = { workspace: repo, artifactRoot: root, profile, script };
    const cases: [string[], string][] = [
      [
        [
          '--approvals',
          await scratch.file(
            'bad-digest.yaml',
            '- { rule: rm-needs-approval, tool: exec, argsDigest: sha256:abc }\n',
          ),
        ],
        '[0].argsDigest at line 1, column 54: sha256: and 64',
      ],
      [
        [
          '--approvals',
          await scratch.file(
            'bad-rule.yaml',
            `- { rule: rm-typo, tool: exec, argsDigest: ${execDigest(['rm'])} }\n`,
          ),
        ],
        "'rm-typo' is not a rule of this run",
      ],
      [
        [
          '--approvals',
          await scratch.file(
            'bad-tool.yaml',
            `- { rule: rm-needs-approval, tool: teleport, argsDigest: ${execDigest(['rm'])} }\n`,
          ),
        ],
        "'teleport' is not a tool of this run",
      ],
      [['--approvals', scratch.path('missing.yaml')], 'cannot be opened'],
      [['--approvals', '/dev/null'], 'is not a regular file'],
      [['--approve', 'rm-typo'], "--approve: 'rm-typo' is not a rule of this run"],
      [['--approve', 'planning_mode'], 'denies and never asks'],
      [
        ['--plan', '--from-plan', '20260101T000000Z-00000000'],
        '--plan: a planning run cannot also',
      ],
    ];
    for (const [extra, message] of cases) {
      const r = await cfh(agentRunArgs(base, extra));
      expect(r.exitCode, `${extra.join(' ')}: ${r.stderr}`).toBe(125);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toContain(message);
      await expect(readdir(root)).rejects.toThrow();
    }
    for (const flag of [
      ['--approve', 'x'],
      ['--approvals', 'f'],
      ['--non-interactive'],
      ['--plan'],
      ['--from-plan', 'x'],
    ]) {
      const r = await cfh([
        'sandbox',
        'run',
        '--workspace',
        repo,
        '--artifact-root',
        root,
        ...flag,
        '--',
        'true',
      ]);
      expect(r.exitCode, r.stderr).toBe(125);
      expect(r.stderr).toContain(`${flag[0] ?? ''}: only for agent runs`);
    }
    await expect(readdir(root)).rejects.toThrow();
  });
});

async function readJsonLines(file: string): Promise<unknown[]> {
  return (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as unknown);
}
