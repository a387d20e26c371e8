// Adversarial round 4, class 9 (the audit re-checks a call recorded "invalid arguments").
// rejections.ts says: "A rejection whose arguments the schema accepts is a rewrite: a refused
// flow or a denied call hidden as the model's mistake", and re-checks the model's arguments
// with the run's held values resolved into them. But the mediator never rejects a call for
// what its *resolved* form fails: a finding at a handle is deferred (tools/model-form.ts) and
// the model's form is decided (policy, the flow). So a refused flow whose handle resolves to
// a value the schema refuses (here a path longer than 4096) can be rewritten as an
// invalid-arguments rejection and the audit's re-check agrees with the forgery. The test
// rewrites the evidence (chain rebuilt, no signing key: the case the docs say is caught, a
// decision its recorded inputs do not give) and asserts cfh audit fails it.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { argsDigest } from '../../src/mediator/mediator.js';
import { copyRun, forge } from './audit-forge.js';
import { agentRunArgs, cfh, onlyRunDir, useScratch } from './helpers.js';
import { yamlFile } from './adv-round4-support.js';

const scratch = useScratch('adv4-audit');

describe('adv round 4: a refused flow rewritten as the model mistake', () => {
  it('cfh audit fails a cfc:clearance denial rewritten as invalid_arguments', async () => {
    const ws = await scratch.sampleRepo();
    const secrets = scratch.path('secrets');
    await mkdir(secrets, { recursive: true });
    // A held value the write_file path schema (max 4096) refuses once resolved.
    await writeFile(path.join(secrets, 'token'), 'S'.repeat(5000));
    const keys = scratch.path('keys');
    await mkdir(keys, { recursive: true });
    const art = scratch.path('art');
    await mkdir(art, { recursive: true });
    const profile = await yamlFile(scratch, 'profile.yaml', {
      extends: 'default',
      name: 'audit-hide',
      description: 'a secret mount and a workspace not cleared for it',
      tools: ['read_file', 'list_dir', 'write_file'],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
    });
    const script = await yamlFile(scratch, 'script.yaml', {
      turns: [
        { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
        { tool_calls: [{ name: 'write_file', input: { path: '{{handle:1}}', content: 'x' } }] },
        { text: 'done' },
      ],
    });
    const env = { CFH_KEY_DIR: keys };
    const run = await cfh(agentRunArgs({ workspace: ws, artifactRoot: art, profile, script }), {
      env,
    });
    expect(run.exitCode).toBe(0);
    const original = await onlyRunDir(art);
    // The real run: the flow refused the write (cfc:clearance), and the audit passes it.
    const real = await cfh(['audit', original], { env });
    expect(real.exitCode).toBe(0);
    expect(await readFile(path.join(original, 'events.jsonl'), 'utf8')).toContain('cfc:clearance');

    const copy = await copyRun(original, scratch.path('forged'));
    const governance = (await readFile(path.join(copy, 'governance.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, any>);
    const reason = "the arguments do not match write_file's schema";
    // An invalid call digests no arguments (checks-policy.ts compare).
    const digest = argsDigest('write_file', undefined);
    await forge(copy, (f) => {
      const call = 'call-0002';
      const of = (e: Record<string, any>) => e.data?.callId === call || e.data?.call_id === call;
      f.events = f.events.filter(
        (e) =>
          !(
            of(e) &&
            ['cfc_handle', 'cfc_flow', 'approval_requested', 'approval_received'].includes(e.type)
          ),
      );
      for (const e of f.events) {
        if (!of(e)) continue;
        if (e.type === 'permission_decision')
          e.data = {
            ...e.data,
            decision: 'deny',
            policy_rule: 'invalid_arguments',
            reason,
            args_digest: digest,
          };
        if (e.type === 'tool_denied') {
          e.type = 'tool_rejected';
          e.data = {
            callId: call,
            toolUseId: e.data.toolUseId,
            tool: e.data.tool,
            reason: 'invalid_arguments',
          };
        }
        if (e.type === 'cfc_label')
          e.data = {
            ...e.data,
            reason: "not run (error): the model gets cfh's refusal only, not joined",
          };
      }
      f.report.blocked = { ...f.report.blocked, denied: 0, unapproved: 0, calls: [] };
      f.report.toolCalls.byStatus = { error: 1 };
      f.report.cfc.flows.denied = 0;
      for (const g of governance)
        if (g.call_id === call) {
          g.decision = {
            ...g.decision,
            value: 'deny',
            policy_rule: 'invalid_arguments',
            reason,
            args_digest: digest,
          };
          g.observation_status = 'error';
        }
      f.files.set('governance.jsonl', governance.map((g) => `${JSON.stringify(g)}\n`).join(''));
      for (const m of f.transcript ?? [])
        for (const b of m.content ?? [])
          if (b.type === 'tool_result' && b.tool_use_id === 'toolu_scripted_1_0') {
            const obs = {
              status: 'error',
              summary:
                'invalid arguments: path: Too big: expected string to have \u003c=4096 characters',
              items: [],
              evidence_refs: [],
              next_valid_actions: ['write_file'],
            };
            b.content = `<untrusted-tool-output tool="write_file">\n${JSON.stringify(obs)}\n</untrusted-tool-output>`;
          }
    });
    const forged = await cfh(['audit', copy], { env });
    if (process.env.ADV4_DEBUG) console.log(forged.stdout);
    // The forgery took: nothing of the refused flow is left in the log.
    expect(await readFile(path.join(copy, 'events.jsonl'), 'utf8')).not.toContain('cfc:clearance');
    // cfh holds: the audit fails a rejection the mediator would never have made.
    expect(forged.exitCode).not.toBe(0);
  });
});
