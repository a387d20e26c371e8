// Context compaction in a real agent run (AH-LIFE-6/7): a scripted long episode compacts
// once; the evidence shows it in order, the summarising attempt is counted, the transcript
// keeps the first message verbatim and records the summary, the CFC context label is kept;
// the audit passes and a forged log flips exactly the compaction check; a compaction that
// fails twice fails the run explicitly; `disabled` never compacts.
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { auditRunDirectory } from '../../src/evidence/audit/audit.js';
import { agentRunArgs, cfh, onlyRunDir, readEvents, readJson, useScratch } from './helpers.js';
import { copyRun, forge, indexOf } from './audit-forge.js';

const scratch = useScratch('compaction');

const list = (input: number) =>
  `  - { tool_calls: [{ name: list_dir, input: { path: . } }], usage: { input_tokens: ${input}, output_tokens: 10 } }`;

function script(inputs: readonly number[], compactions: readonly string[]): string {
  return [
    'model: scripted-long',
    'turns:',
    ...inputs.map(list),
    '  - { text: done, usage: { input_tokens: 1200, output_tokens: 5 } }',
    ...(compactions.length === 0 ? [] : ['compactions:', ...compactions.map((c) => `  - ${c}`)]),
    '',
  ].join('\n');
}

async function run(name: string, compactAt: string, body: string) {
  const repo = await scratch.sampleRepo();
  const profile = await scratch.file(
    `${name}.yaml`,
    `extends: untrusted-repo\nname: ${name}\ncontext: { compactAt: ${compactAt} }\ncfc: { mode: observe }\nworkspace: { mode: ro, label: { confidentiality: [internal], integrity: [repo:untrusted] } }\n`,
  );
  const s = await scratch.file(`${name}-script.yaml`, body);
  const root = scratch.path(`art-${name}`);
  const r = await cfh(
    agentRunArgs({
      workspace: repo,
      artifactRoot: root,
      profile,
      script: s,
      prompt: 'List it <all>',
    }),
  );
  const dir = await onlyRunDir(root);
  const events = await readEvents(dir);
  return { r, dir, events };
}

const types = (events: readonly { type: string }[]) => events.map((e) => e.type);

describe('context compaction in an agent run', () => {
  it('a long episode compacts once, in order, with the evidence to show it', async () => {
    const { r, dir, events } = await run(
      'compacting',
      '5000',
      script([2000, 4000, 6000, 1500], ['{ summary: "Listed the workspace three times." }']),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const t = types(events);
    const at = (type: string, pred: (d: Record<string, unknown>) => boolean = () => true) =>
      events.findIndex((e) => e.type === type && pred(e.data));
    const started = at('compaction_started');
    const sent = at('model_call_started', (d) => d.attemptId === 'compact-1');
    const answered = at('model_call_completed', (d) => d.attemptId === 'compact-1');
    const done = at('compaction_completed');
    const nextTurn = at('model_call_started', (d) => d.attemptId === 'turn-4');
    expect(started).toBeGreaterThan(0);
    expect([started, sent, answered, done, nextTurn]).toEqual(
      [started, sent, answered, done, nextTurn].sort((a, b) => a - b),
    );
    expect(t.filter((x) => x.startsWith('compaction_'))).toEqual([
      'compaction_started',
      'compaction_completed',
    ]);
    const completed = events[done]?.data ?? {};
    expect(completed).toMatchObject({
      n: 1,
      mechanism: 'summary-request',
      keptSlots: 1,
      keptTail: 2,
    });
    // The summary carries the context's label (the workspace's `internal`), and the next
    // turn's influence is no lower: compaction drops no label (AH-CFC-7).
    const influence = events.find((e) => e.type === 'cfc_influence' && e.data.turn === 5)?.data;
    expect(completed.label).toMatchObject({ confidentiality: ['internal'] });
    expect(influence?.label).toEqual(completed.label);
    // The snapshot says the threshold, the state and what the provider offers.
    const snapshot = await readJson(path.join(dir, 'snapshot.json'));
    expect(snapshot.context).toMatchObject({
      compactAt: 5000,
      thresholdTokens: 5000,
      state: 'armed',
      mechanism: 'summary-request',
      provider: { adapter: 'scripted', used: false },
    });
    // The transcript: the first message verbatim, then the summary as fenced data.
    const lines = (await readFile(path.join(dir, 'transcript.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { role: string; content: { type: string; text?: string }[] });
    expect(lines[0]?.content[0]?.text).toBe('<direct-command>\nList it <all>\n</direct-command>');
    const summary = lines.find((m) => m.content[0]?.text?.startsWith('<compacted-summary'));
    expect(summary?.role).toBe('user');
    expect(summary?.content[0]?.text).toContain('Listed the workspace three times.');
    // The summarising attempt is in the report's usage like any other.
    const report = await readJson<{ usage: { attemptId: string }[] }>(
      path.join(dir, 'report.json'),
    );
    expect(report.usage.map((u) => u.attemptId)).toContain('compact-1');

    const audit = await auditRunDirectory(dir, {});
    const bad = audit.checks.filter((c) => c.verdict === 'fail' || c.verdict === 'inconclusive');
    expect(bad, JSON.stringify(bad, null, 2)).toEqual([]);
    expect(audit.checks.find((c) => c.id === 'context.compaction-ordered')?.verdict).toBe('pass');
    // Mutation: the completion dropped from a re-sealed log flips exactly this check.
    const copy = await copyRun(dir, scratch.path('mutations'));
    await forge(copy, (f) => void f.events.splice(indexOf(f, 'compaction_completed'), 1));
    const after = await auditRunDirectory(copy, {});
    const flipped = after.checks.filter(
      (c) => c.verdict !== audit.checks.find((b) => b.id === c.id)?.verdict,
    );
    expect(flipped.map((c) => [c.id, c.verdict])).toEqual([['context.compaction-ordered', 'fail']]);
  });

  it('a compaction that fails is retried before the next request, then fails the run explicitly', async () => {
    const { r, dir, events } = await run(
      'failing',
      '5000',
      script(
        [2000, 4000, 6000, 7000, 8000],
        ['{ fail: overloaded }', '{ fail: still overloaded }'],
      ),
    );
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/^cfh: agent run \S+ failed \(error:compaction_failed, exit 1\)/m);
    const failed = events.filter((e) => e.type === 'compaction_failed').map((e) => e.data.retry);
    expect(failed).toEqual(['next_request', 'none']);
    const finished = events.find((e) => e.type === 'run_finished')?.data;
    expect(finished).toMatchObject({ status: 'failed', terminalReason: 'error:compaction_failed' });
    const report = await readJson<{ error: { code: string; message: string } }>(
      path.join(dir, 'report.json'),
    );
    expect(report.error).toMatchObject({ code: 'compaction_failed' });
    expect(report.error.message).toMatch(/failed 2 times in a row/);
    const audit = await auditRunDirectory(dir, {});
    expect(audit.checks.find((c) => c.id === 'context.compaction-ordered')?.verdict).toBe('pass');
  });

  it('disabled never compacts, however long the context', async () => {
    const { r, dir, events } = await run(
      'disabled',
      'disabled',
      script([2000, 4000, 6000, 8000], []),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(types(events).filter((t) => t.startsWith('compaction_'))).toEqual([]);
    const snapshot = await readJson(path.join(dir, 'snapshot.json'));
    expect(snapshot.context).toMatchObject({ state: 'disabled', thresholdTokens: null });
  });
});
