// Adversarial round 3, class 11 (the audit): `cfh audit` decides each recorded decision
// again from its recorded inputs, and operators.md says a rewrite that leaves "a decision
// that its recorded inputs do not give" fails. The re-derivation takes a call's rejection
// as invalid from the `tool_rejected` event's own word: it never checks the arguments the
// model sent (they are in the transcript) against the tool's schema. So a refused flow (a
// secret written into a workspace not cleared for it: approval_required under
// cfc:clearance) is hidden by rewriting the call as an invalid one: its flow record
// dropped, its decision `deny` under `invalid_arguments`, its `tool_denied` a
// `tool_rejected`, what the model was shown an "invalid arguments" error, every digest and
// the chain re-sealed (audit-forge.ts), no signing key in play (the run is unsigned and no
// key exists: the docs' claim is about consistency, not the signature). cfh holds when the
// audit fails the rewrite.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditRunDirectory, type AuditResult } from '../../src/evidence/audit/audit.js';
import { summarizeCfc } from '../../src/evidence/cfc-summary.js';
import { argsDigest } from '../../src/mediator/mediator.js';
import { copyRun, eventOf, forge, indexOf, type Forgery } from './audit-forge.js';
import { useScratch } from './helpers.js';
import { profile, script, scriptedRun, secretDir } from './adv-round3-support.js';

const scratch = useScratch('adv3-audit');

const failing = (r: AuditResult): string[] =>
  r.checks.filter((c) => c.verdict === 'fail').map((c) => `${c.id}: ${c.where.join('; ')}`);

/**
 * A real run whose second call, a secret written into the workspace, the flow refused. The
 * secret mount's label names `integrity` (`[vault]`) unless `bare`: a mount labelled with
 * confidentiality alone gives handles whose integrity does not count (operators.md,
 * "Integrity of a handle's value").
 */
async function refusedRun(bare = false): Promise<string> {
  const secrets = await secretDir(scratch, { token: 'audit-secret-5Jd8' });
  const p = await profile(scratch, {
    tools: ['read_file', 'list_dir', 'write_file'],
    workspace: { mode: 'rw', label: { integrity: ['repo'] } },
    cfc: { mode: 'enforce-explicit', modelClearance: [] },
    mounts: [
      {
        source: secrets,
        target: '/secrets',
        mode: 'ro',
        label: bare
          ? { confidentiality: ['secret'] }
          : { confidentiality: ['secret'], integrity: ['vault'] },
      },
    ],
  });
  const s = await script(scratch, [
    [{ name: 'read_file', input: { path: '/secrets/token' } }],
    [{ name: 'write_file', input: { path: 'out.txt', content: '{{handle:1}}' } }],
  ]);
  const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
  expect(r.exitCode, r.stderr).toBe(0);
  return dir;
}

/** The call refused by its flow, rewritten as one whose arguments failed the schema. */
function asInvalid(f: Forgery, callId: string, governance: Record<string, any>[]): void {
  const denied = eventOf(f, 'tool_denied', (d) => d.callId === callId);
  const issues = 'content: Too big: expected string to have <=1000000 characters';
  f.events.splice(
    indexOf(f, 'cfc_flow', (d) => d.callId === callId),
    1,
  );
  for (const type of ['approval_requested', 'approval_received'])
    while (f.events.some((e) => e.type === type && e.data.callId === callId))
      f.events.splice(
        indexOf(f, type, (d) => d.callId === callId),
        1,
      );
  Object.assign(eventOf(f, 'permission_decision', (d) => d.call_id === callId).data, {
    decision: 'deny',
    policy_rule: 'invalid_arguments',
    reason: "the arguments do not match write_file's schema",
    args_digest: argsDigest('write_file', undefined),
  });
  denied.type = 'tool_rejected';
  denied.data = {
    callId,
    toolUseId: denied.data.toolUseId,
    tool: denied.data.tool,
    reason: 'invalid_arguments',
  };
  const observation = {
    status: 'error',
    summary: `invalid arguments: ${issues}`,
    items: ['write_file'],
    evidence_refs: [],
    next_valid_actions: [],
  };
  for (const m of f.transcript ?? [])
    for (const b of m.content as Record<string, any>[])
      if (b.type === 'tool_result' && b.tool_use_id === denied.data.toolUseId) {
        b.is_error = true;
        b.content = `<untrusted-tool-output tool="write_file">\n${JSON.stringify(observation)}\n</untrusted-tool-output>`;
      }
  for (const g of governance) {
    const s = JSON.stringify(g);
    if (!s.includes(callId)) continue;
    const swap = (o: any): any =>
      typeof o === 'string'
        ? o.replace('approval_required', 'deny').replace('cfc:clearance', 'invalid_arguments')
        : Array.isArray(o)
          ? o.map(swap)
          : typeof o === 'object' && o !== null
            ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, swap(v)]))
            : o;
    Object.assign(g, swap(g));
  }
  f.files.set('governance.jsonl', governance.map((g) => `${JSON.stringify(g)}\n`).join(''));
  f.report.cfc = summarizeCfc(
    f.report.cfc.mode,
    f.events.map((e) => ({ type: String(e.type), data: e.data })),
  );
}

describe('class 11: a refused flow hidden as an invalid call', () => {
  it('the audit fails a run whose valid call was rewritten as rejected for invalid arguments', async () => {
    const run = await refusedRun();
    const clean = await auditRunDirectory(run);
    expect(failing(clean)).toEqual([]);
    const copy = await copyRun(run, scratch.path('forged'));
    const governance = (await readFile(path.join(copy, 'governance.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, any>);
    await forge(copy, (f) => {
      asInvalid(f, 'call-0002', governance);
    });
    const r = await auditRunDirectory(copy);
    expect(failing(r).length, 'the rewrite passed every check').toBeGreaterThan(0);
  });
});

describe('class 11: the audit on a genuine run', () => {
  it("passes a run whose handle came from an operator mount labelled without integrity (operators.md: 'deploy with the token')", async () => {
    // The run judges such a handle with its confidentiality and the influence's integrity
    // (cfc-calls.ts explicitLabel); the audit's judgeFlow takes the handle's own label and
    // fails the run's true record: a real run reads as rewritten.
    const run = await refusedRun(true);
    expect(failing(await auditRunDirectory(run))).toEqual([]);
  });
});
