// What a run says when it ends, through the real CLI and engine. The class: a run that
// ends without telling its caller what it left (the run id, where the evidence is, a patch
// waiting, calls that were blocked), so a person has to dig and CI cannot notice an agent
// that was blocked. Every `sandbox run` ends with one line on stderr, never mixed into
// the command's stdout, escaped (AH-LIFE-2: after the terminal record); `--json` carries
// the same fields; `--fail-on-blocked` (or the profile's `failOnBlocked`) fails an agent
// run whose calls were denied or left unapproved, and the evidence says which.
import { describe, expect, it } from 'vitest';
import { chmod, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';
import { ASKING_PROFILE, execScript, repoWith } from './approval-support.js';

const scratch = useScratch('run-said');

/** ESC, BEL, a bidi override: what must never reach a terminal raw. */
const CONTROL = {
  test: (s: string): boolean => /[\u202e]/.test(s) || s.includes('\u001b') || s.includes('\u0007'),
};

/** The last line cfh wrote on stderr. */
function lastLine(stderr: string): string {
  return stderr.trimEnd().split('\n').at(-1) ?? '';
}

/** ASKING_PROFILE with a rule that denies `cat`, and any extra top-level lines. */
function blockingProfile(extra: readonly string[] = []): string {
  return [
    ...extra,
    ASKING_PROFILE.trimEnd(),
    '  - id: cat-denied',
    '    match: { tool: exec, args: { command.0: cat } }',
    '    decision: deny',
    '    reason: reading with cat is refused here',
    '',
  ].join('\n');
}

/** rm (asks: nobody to ask), cat (denied), a tool outside the surface, then an answer. */
const BLOCKED_SCRIPT = [
  'turns:',
  '  - tool_calls:',
  '      - { name: exec, input: { command: [rm, a.txt] } }',
  '  - tool_calls:',
  '      - { name: exec, input: { command: [cat, a.txt] } }',
  '  - tool_calls:',
  '      - { name: "no_such_tool", input: {} }',
  '  - text: "done anyway"',
  '',
].join('\n');

async function blockedRun(name: string, extra: readonly string[], profileExtra: string[] = []) {
  const repo = await repoWith(scratch, ['a.txt']);
  const profile = await scratch.file(`${name}-profile.yaml`, blockingProfile(profileExtra));
  const script = await scratch.file(`${name}.yaml`, BLOCKED_SCRIPT);
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }, extra),
  );
  return { r, root, repo };
}

describe('the line every run ends with', () => {
  it('names the run and its evidence on stderr, on a line of its own; stdout stays the command bytes', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-plain');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--',
      'sh',
      '-c',
      'printf out; printf err >&2',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    expect(r.stdout).toBe('out');
    expect(r.stderr).toBe(`err\ncfh: run ${runIdOf(dir)} completed (exit 0); evidence in ${dir}\n`);
  });

  it('says the exit status of a command that failed, and of a run that hit a limit', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-exit');
    const args = ['sandbox', 'run', '--workspace', repo, '--artifact-root', root];
    const failed = await cfh([...args, '--', 'sh', '-c', 'exit 3']);
    expect(failed.exitCode).toBe(3);
    expect(lastLine(failed.stderr)).toMatch(/^cfh: run \S+ completed \(exit 3\); evidence in /);
    const timedOut = await cfh([...args, '--timeout', '1', '--', 'sleep', '30']);
    expect(timedOut.exitCode).toBe(124);
    expect(lastLine(timedOut.stderr)).toMatch(
      /^cfh: run \S+ failed \(limit_reached:wall_time, exit 124\); evidence in /,
    );
  });

  it('escapes what it names: an artifact root with control characters cannot drive the terminal', async () => {
    const repo = await scratch.sampleRepo();
    // A root a script was handed: ESC, BEL and a line feed that would start a fake line.
    const root = scratch.path('art-\u001b]0;pwned\u0007\ncfh: run X completed');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--',
      'true',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(CONTROL.test(r.stderr)).toBe(false);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('art-\\x1b]0;pwned\\x07\\ncfh: run X completed');
  });

  it('a draft run says how many changes wait and the commands that show and apply them', async () => {
    const repo = await scratch.sampleRepo();
    // As root, the draft is copied as the workspace's owner, who must reach it.
    await chmod(path.dirname(repo), 0o755);
    // A root with a space: the commands printed must work when pasted into a shell.
    const root = scratch.path('art draft');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--workspace-mode',
      'draft',
      '--artifact-root',
      root,
      '--',
      'sh',
      '-c',
      'echo new > new.txt; echo more >> README.md; rm -f .gitignore; mkdir -p d; echo x > d/y',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const id = runIdOf(dir);
    const patch = await readJson<{ changes: { applicable: boolean }[] }>(
      path.join(dir, 'patch', 'patch.json'),
    );
    const n = patch.changes.filter((c) => c.applicable).length;
    expect(n).toBeGreaterThanOrEqual(3);
    const rootWord = `'${root}'`;
    expect(lastLine(r.stderr)).toBe(
      `cfh: run ${id} completed (exit 0); evidence in ${dir}; ${String(n)} changes waiting: cfh runs diff ${id} --artifact-root ${rootWord}, cfh runs apply ${id} --artifact-root ${rootWord}`,
    );
    // The command it names works as printed (the shell word unquoted is the root).
    const diff = await cfh(['runs', 'diff', id, '--artifact-root', root]);
    expect(diff.exitCode, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('new.txt');

    // --json: the same facts as fields.
    const j = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--workspace-mode',
      'draft',
      '--artifact-root',
      scratch.path('art-draft-json'),
      '--json',
      '--',
      'sh',
      '-c',
      'echo new > other.txt',
    ]);
    expect(j.exitCode, j.stderr).toBe(0);
    expect(j.stderr).toBe('');
    const result = JSON.parse(j.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({
      runId: expect.any(String),
      artifactDir: expect.any(String),
      patch: {
        changes: 1,
        added: 1,
        file: 'patch/patch.json',
        diff: 'patch/patch.diff',
        files: [{ path: 'other.txt', kind: 'added', applicable: true }],
        filesOmitted: 0,
      },
    });
  });

  it('a draft run that changed nothing says so, and a direct run has no patch in --json', async () => {
    const repo = await scratch.sampleRepo();
    await chmod(path.dirname(repo), 0o755);
    const root = scratch.path('art-nochange');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--workspace-mode',
      'draft',
      '--artifact-root',
      root,
      '--',
      'true',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(lastLine(r.stderr)).toMatch(/; no changes in the draft$/);
    const j = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--json',
      '--',
      'true',
    ]);
    expect(JSON.parse(j.stdout)).toMatchObject({ patch: null });
  });
});

describe('an agent run that was blocked', () => {
  it('says how many calls were denied and left unapproved, and exits 0 without --fail-on-blocked', async () => {
    const { r, root } = await blockedRun('said', []);
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const id = runIdOf(dir);
    expect(r.stdout).toBe('done anyway\n');
    expect(lastLine(r.stderr)).toBe(
      `cfh: agent run ${id} completed (exit 0); evidence in ${dir}; 2 calls denied, 1 left unapproved (cfh runs show ${id} --artifact-root ${root})`,
    );
    const report = await readJson(path.join(dir, 'report.json'));
    expect(report.blocked).toMatchObject({ denied: 2, unapproved: 1, failOnBlocked: false });
  });

  it('--fail-on-blocked: exit 1, the run failed (blocked_calls), and the evidence says which calls', async () => {
    const { r, root, repo } = await blockedRun('fail', ['--fail-on-blocked']);
    expect(r.exitCode, r.stderr).toBe(1);
    const dir = await onlyRunDir(root);
    const id = runIdOf(dir);
    expect(lastLine(r.stderr)).toBe(
      `cfh: agent run ${id} failed (blocked_calls, exit 1); evidence in ${dir}; 2 calls denied, 1 left unapproved (cfh runs show ${id} --artifact-root ${root})`,
    );
    expect(await readFile(path.join(repo, 'a.txt'), 'utf8')).toBe('a.txt\n');
    const events = await readEvents(dir);
    const blocked = events.filter((e) => e.type === 'run_blocked');
    expect(blocked).toHaveLength(1);
    expect(blocked[0]?.data).toEqual({
      denied: 2,
      unapproved: 1,
      calls: [
        {
          callId: 'call-0001',
          tool: 'exec',
          rule: 'rm-needs-approval',
          decision: 'approval_required',
          status: 'approval_required',
        },
        {
          callId: 'call-0002',
          tool: 'exec',
          rule: 'cat-denied',
          decision: 'deny',
          status: 'denied',
        },
        {
          callId: 'call-0003',
          tool: 'no_such_tool',
          rule: 'unknown_tool',
          decision: 'deny',
          status: 'denied',
        },
      ],
    });
    // Durable before the terminal record, which names the reason (AH-LIFE-2).
    const finished = events.find((e) => e.type === 'run_finished');
    expect(finished?.data).toMatchObject({
      status: 'failed',
      terminalReason: 'blocked_calls',
      exitCode: 1,
    });
    expect(events.indexOf(blocked[0] as (typeof events)[number])).toBeLessThan(
      events.indexOf(finished as (typeof events)[number]),
    );
    expect(await readJson(path.join(dir, 'state.json'))).toMatchObject({ state: 'failed' });
    // The snapshot fixes the setting before anything ran.
    const snapshot = await readJson<{ profile: { resolved: Record<string, unknown> } }>(
      path.join(dir, 'snapshot.json'),
    );
    expect(JSON.stringify(snapshot)).toContain('"failOnBlocked":true');
  });

  it("the profile's failOnBlocked does the same, and --json carries the blocked calls", async () => {
    const { r } = await blockedRun('profile', ['--json'], ['failOnBlocked: true']);
    expect(r.exitCode, r.stderr).toBe(1);
    const result = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(result).toMatchObject({
      status: 'failed',
      terminalReason: 'blocked_calls',
      exitCode: 1,
      runId: expect.any(String),
      artifactDir: expect.any(String),
      patch: null,
      blocked: {
        denied: 2,
        unapproved: 1,
        calls: [
          { tool: 'exec', rule: 'rm-needs-approval', decision: 'approval_required' },
          { tool: 'exec', rule: 'cat-denied', decision: 'deny' },
          { tool: 'no_such_tool', rule: 'unknown_tool', decision: 'deny' },
        ],
      },
    });
  });

  it('a run whose calls all ran is not failed by --fail-on-blocked', async () => {
    const repo = await repoWith(scratch, ['a.txt']);
    const script = await scratch.file('clean.yaml', execScript([['ls']]));
    const root = scratch.path('art-clean');
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script }, [
        '--fail-on-blocked',
      ]),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(lastLine(r.stderr)).toMatch(
      /^cfh: agent run \S+ completed \(exit 0\); evidence in \S+$/,
    );
  });

  it('a planning run is not failed by the mutations planning mode refuses, but is by other refusals', async () => {
    const repo = await repoWith(scratch, ['a.txt']);
    const profile = await scratch.file(
      'plan-profile.yaml',
      'extends: untrusted-repo\nfailOnBlocked: true\n',
    );
    const mutating = await scratch.file('plan-touch.yaml', execScript([['touch', 'x']], 'plan'));
    const root = scratch.path('art-plan');
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script: mutating }, ['--plan']),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(lastLine(r.stderr)).toMatch(/completed \(exit 0\); .*; 1 call denied \(cfh runs show /);

    const outside = await scratch.file(
      'plan-unknown.yaml',
      'turns:\n  - tool_calls:\n      - { name: "write_everything", input: {} }\n  - text: plan\n',
    );
    const r2 = await cfh(
      agentRunArgs(
        { workspace: repo, artifactRoot: scratch.path('art-plan2'), profile, script: outside },
        ['--plan'],
      ),
    );
    expect(r2.exitCode, r2.stderr).toBe(1);
    expect(lastLine(r2.stderr)).toMatch(/failed \(blocked_calls, exit 1\)/);
  });

  it('--fail-on-blocked is an agent flag: refused for a command run before anything exists', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-cmdflag');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--fail-on-blocked',
      '--',
      'true',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toContain('--fail-on-blocked: only for agent runs');
    await expect(readdir(root)).rejects.toThrow();
  });
});

describe('a model-chosen tool name in what is printed', () => {
  it('the blocked calls in --json are exact; the line on stderr carries counts only, escaped', async () => {
    const repo = await repoWith(scratch, ['a.txt']);
    const name = 'x\u001b]0;owned\u0007\u202e';
    const script = await scratch.file(
      'evil-name.yaml',
      `turns:\n  - tool_calls:\n      - { name: ${JSON.stringify(name)}, input: {} }\n  - text: ok\n`,
    );
    const root = scratch.path('art-evil');
    const human = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script }),
    );
    expect(human.exitCode, human.stderr).toBe(0);
    expect(CONTROL.test(human.stderr)).toBe(false);
    expect(lastLine(human.stderr)).toMatch(/; 1 call denied \(cfh runs show /);
    const j = await cfh(
      agentRunArgs(
        {
          workspace: repo,
          artifactRoot: scratch.path('art-evil-json'),
          profile: 'untrusted-repo',
          script,
        },
        ['--json'],
      ),
    );
    const result = JSON.parse(j.stdout) as { blocked: { calls: { tool: string }[] } };
    expect(result.blocked.calls.map((c) => c.tool)).toEqual([name]);
  });
});
