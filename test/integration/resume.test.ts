// `cfh sandbox resume` through the real CLI and engine (AH-ART-4/5, AH-CFC-5): a cancelled
// run resumed as a new run linked to the old chain's final hash (and `cfh audit` failing
// the link once the old chain is edited); an override that narrows is accepted and recorded,
// one that broadens is refused with 125 before anything exists; a truncated chain and a run
// still running are refused; under enforce-strict the old direct command carries no
// authority into the resumed run, and a new --prompt gets its own capture.
import { describe, expect, it } from 'vitest';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  readEvents,
  readJson,
  runIdOf,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';

const scratch = useScratch('resume');

const ANSWER = 'turns:\n  - text: resumed and done\n';
const SLOW =
  'turns:\n  - tool_calls:\n      - { name: exec, input: { command: [sleep, "60"] } }\n  - text: never\n';

async function runIds(root: string): Promise<string[]> {
  return (await readdir(root)).filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{8}$/.test(n)).sort();
}

/** A run of the untrusted-repo profile, cancelled (SIGINT) while its first tool call sleeps. */
async function cancelledRun(root: string, repo: string): Promise<string> {
  const script = await scratch.file('slow.yaml', SLOW);
  const child = startCfh(
    agentRunArgs({
      workspace: repo,
      artifactRoot: root,
      profile: 'untrusted-repo',
      script,
      prompt: 'sleep',
    }),
  );
  const dir = await waitForEvent(root, 'tool_container_started');
  child.kill('SIGINT');
  const result = await child;
  expect(result.exitCode).toBe(130);
  return runIdOf(dir);
}

const resume = (runId: string, root: string, extra: readonly string[] = []) =>
  scratch
    .file('answer.yaml', ANSWER)
    .then((script) =>
      cfh([
        'sandbox',
        'resume',
        runId,
        '--artifact-root',
        root,
        '--script',
        script,
        '--json',
        ...extra,
      ]),
    );

describe('cfh sandbox resume', () => {
  const root = (): string => scratch.path('art');
  let oldId = '';

  it('resumes a cancelled run as a new run linked to the old chain, and audit checks the link', async () => {
    const repo = await scratch.sampleRepo();
    oldId = await cancelledRun(root(), repo);
    const oldEvents = await readEvents(path.join(root(), oldId));
    const last = oldEvents.at(-1) as unknown as { seq: number; hash: string };

    const result = await resume(oldId, root());
    expect(result.exitCode, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as { runId: string; status: string; finalAnswer: string };
    expect(out).toMatchObject({ status: 'completed', finalAnswer: 'resumed and done' });
    const dir = path.join(root(), out.runId);
    const snapshot = await readJson<{ resumedFrom: Record<string, unknown> }>(
      path.join(dir, 'snapshot.json'),
    );
    expect(snapshot.resumedFrom).toMatchObject({
      runId: oldId,
      status: 'cancelled',
      finalSeq: last.seq,
      finalHash: last.hash,
      prompt: 'none',
      overrides: {},
      transcript: { anchored: true },
    });
    const events = await readEvents(dir);
    const linked = events.findIndex((e) => e.type === 'run_resumed');
    expect(linked).toBeGreaterThan(-1);
    expect(linked).toBeLessThan(events.findIndex((e) => e.type === 'model_call_started'));
    // No capture: cfh's continuation text is not a direct command of the caller.
    expect(events.some((e) => e.type === 'prompt_captured')).toBe(false);
    // The old direct command is context in the rebuilt context, never a direct command.
    const context = await readFile(path.join(dir, 'resumed-context.jsonl'), 'utf8');
    expect(context).toContain('<context>\\nThe direct command of run');
    expect(context).not.toMatch(/<direct-command>/);
    // The cancelled turn's call was answered (aborted) in the old run: the context is paired.
    expect(context).toContain('tool_result');
    expect(await containersOfRun(out.runId)).toEqual([]);

    const audit = await cfh(['audit', out.runId, '--artifact-root', root(), '--json']);
    expect(audit.exitCode, audit.stdout).toBe(0);
    const checks = (JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] })
      .checks;
    expect(checks.find((c) => c.id === 'resume.link')?.verdict).toBe('pass');
  });

  it('accepts an override that narrows, and records it', async () => {
    const result = await resume(oldId, root(), [
      '--max-tool-calls',
      '3',
      '--tool',
      'read_file',
      '--cpus',
      '0.5',
    ]);
    expect(result.exitCode, result.stderr).toBe(0);
    const { runId } = JSON.parse(result.stdout) as { runId: string };
    const snapshot = await readJson<{
      resumedFrom: { overrides: Record<string, string> };
      tools: string[];
      budgets: { maxToolCalls: number };
    }>(path.join(root(), runId, 'snapshot.json'));
    expect(snapshot.resumedFrom.overrides).toEqual({
      'max-tool-calls': '3',
      tools: 'read_file',
      cpus: '0.5',
    });
    expect(snapshot.tools).toEqual(['read_file']);
    expect(snapshot.budgets.maxToolCalls).toBe(3);
  });

  it.each([
    [['--network', 'open'], /^cfh: network\.mode: 'open' is broader than 'disabled'; /m],
    [['--max-tool-calls', '5000'], /^cfh: budgets\.maxToolCalls: 5000 is more than /m],
    [['--tool', 'no_such_tool'], /^cfh: tools: adds no_such_tool; /m],
    [['--cfc', 'observe'], /^cfh: cfc\.mode: /m],
  ])(
    'refuses an override that broadens (%s) with 125, before anything exists',
    async (flags, message) => {
      const before = await runIds(root());
      const result = await resume(oldId, root(), flags);
      expect(result.exitCode).toBe(125);
      expect(result.stderr).toMatch(message);
      expect(await runIds(root())).toEqual(before);
    },
  );

  it('fails the link in cfh audit once the old chain is edited (mutation)', async () => {
    const result = await resume(oldId, root());
    const { runId } = JSON.parse(result.stdout) as { runId: string };
    const file = path.join(root(), oldId, 'events.jsonl');
    const body = await readFile(file, 'utf8');
    const lines = body.trimEnd().split('\n');
    const end = JSON.parse(lines.at(-1) ?? '{}') as { hash: string };
    end.hash = end.hash.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    await writeFile(file, [...lines.slice(0, -1), JSON.stringify(end)].join('\n') + '\n');
    const audit = await cfh(['audit', runId, '--artifact-root', root(), '--json']);
    expect(audit.exitCode).toBe(1);
    const checks = (
      JSON.parse(audit.stdout) as { checks: { id: string; verdict: string; where: string[] }[] }
    ).checks;
    const link = checks.find((c) => c.id === 'resume.link');
    expect(link?.verdict).toBe('fail');
    expect(link?.where.join('\n')).toMatch(/hash is not the link's finalHash/);
    // And the edited run itself can no longer be resumed: its chain does not verify.
    const again = await resume(oldId, root());
    expect(again.exitCode).toBe(125);
    expect(again.stderr).toMatch(/^cfh: resume .*: its evidence does not verify/m);
  });

  it('refuses a truncated chain', async () => {
    const r = scratch.path('art-trunc');
    const repo = await scratch.sampleRepo();
    const first = await cfh(
      agentRunArgs({
        workspace: repo,
        artifactRoot: r,
        profile: 'untrusted-repo',
        script: await scratch.file('a.yaml', ANSWER),
      }),
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const [id = ''] = await runIds(r);
    const file = path.join(r, id, 'events.jsonl');
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    await writeFile(file, lines.slice(0, -3).join('\n') + '\n');
    const result = await resume(id, r);
    expect(result.exitCode).toBe(125);
    expect(result.stderr).toMatch(/^cfh: resume .*: its evidence does not verify/m);
    expect(await runIds(r)).toEqual([id]);
  });

  it('class 9: resumes with the held host-obeyed mounts again; refuses once they are not the same', async () => {
    const r = scratch.path('art-obeyed');
    const repo = await scratch.sampleRepo();
    await writeFile(path.join(repo, '.envrc'), 'export A=1\n');
    const first = await cfh(
      agentRunArgs({
        workspace: repo,
        artifactRoot: r,
        profile: 'untrusted-repo',
        script: await scratch.file('a.yaml', ANSWER),
      }),
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const [id = ''] = await runIds(r);
    const snapshot = await readJson<{ hostObeyed: { readOnly: string[] } }>(
      path.join(r, id, 'snapshot.json'),
    );
    expect(snapshot.hostObeyed.readOnly).toEqual(['/workspace/.envrc']);
    const again = await resume(id, r);
    expect(again.exitCode, again.stderr).toBe(0);
    const [, second = ''] = await runIds(r);
    const resumed = await readJson<{ hostObeyed: { readOnly: string[] } }>(
      path.join(r, second, 'snapshot.json'),
    );
    expect(resumed.hostObeyed.readOnly).toEqual(['/workspace/.envrc']);
    // Gone since: the resume would mount less than the run it continues; refused as such.
    const { rm } = await import('node:fs/promises');
    await rm(path.join(repo, '.envrc'));
    const refused = await resume(id, r);
    expect(refused.exitCode).toBe(125);
    expect(refused.stderr).toMatch(/its mounts are no longer the same objects/);
  });

  it('refuses a run that is still running', async () => {
    const r = scratch.path('art-live');
    const repo = await scratch.sampleRepo();
    const child = startCfh(
      agentRunArgs({
        workspace: repo,
        artifactRoot: r,
        profile: 'untrusted-repo',
        script: await scratch.file('s2.yaml', SLOW),
      }),
    );
    try {
      const dir = await waitForEvent(r, 'tool_container_started');
      const result = await resume(runIdOf(dir), r);
      expect(result.exitCode).toBe(125);
      expect(result.stderr).toMatch(/^cfh: resume .*: it is still running/m);
    } finally {
      child.kill('SIGINT');
      await child.catch(() => undefined);
    }
  });

  it('under enforce-strict the old direct command has no authority; a new --prompt gets a fresh capture', async () => {
    const r = scratch.path('art-cfc');
    const repo = await scratch.sampleRepo();
    const first = await cfh(
      agentRunArgs(
        {
          workspace: repo,
          artifactRoot: r,
          profile: 'untrusted-repo',
          prompt: 'write a.txt',
          script: await scratch.file('c.yaml', ANSWER),
        },
        ['--cfc', 'enforce-strict'],
      ),
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const [id = ''] = await runIds(r);
    const oldCapture = (await readEvents(path.join(r, id))).find(
      (e) => e.type === 'prompt_captured',
    );
    expect(oldCapture).toBeDefined();

    const bare = await resume(id, r);
    expect(bare.exitCode, bare.stderr).toBe(0);
    const bareEvents = await readEvents(
      path.join(r, (JSON.parse(bare.stdout) as { runId: string }).runId),
    );
    expect(bareEvents.some((e) => e.type === 'prompt_captured')).toBe(false);
    const influence = bareEvents.filter((e) => e.type === 'cfc_influence');
    expect(influence.length).toBeGreaterThan(0);
    for (const e of influence) {
      expect(e.data.authority).toBeNull();
      expect((e.data.label as { integrity: string[] }).integrity).not.toContain('prompt:direct');
    }

    const fresh = await resume(id, r, ['--prompt', 'now write b.txt']);
    expect(fresh.exitCode, fresh.stderr).toBe(0);
    const freshEvents = await readEvents(
      path.join(r, (JSON.parse(fresh.stdout) as { runId: string }).runId),
    );
    const capture = freshEvents.find((e) => e.type === 'prompt_captured');
    // Bound to the new value, not to the old one.
    expect(capture?.data.sha256).not.toBe(oldCapture?.data.sha256);
    expect(capture?.data.chars).toBe('now write b.txt'.length);
    expect(freshEvents.find((e) => e.type === 'cfc_influence')?.data.authority).toBe(
      capture?.data.captureId,
    );
  });
});
