// `cfh audit` against real run directories of each kind (AH-ART-1, AH-LIFE-*, AH-TOOL-*,
// AH-USAGE-*, AH-DIAG-2, AH-CONT-4/5, AH-INV-2/3): a fresh run passes; each seeded
// violation (test/integration/audit-forge.ts) flips exactly its own check and no other; raw
// tampering fails with the place; the expected-failures ledger fails both on a new failure
// and on one that stopped occurring; the exit status is 0 / 1 / 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFile, cp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { auditRunDirectory, type AuditResult } from '../../src/evidence/audit/audit.js';
import { CHECKS } from '../../src/evidence/audit/checks.js';
import { loadLedger } from '../../src/evidence/audit/ledger.js';
import { keyPaths, loadTrustedKey } from '../../src/evidence/signing.js';
import { hashEvent } from '../../src/evidence/event-log.js';
import { cfh, runIdOf, useScratch } from './helpers.js';
import { makeAuditFixtures, type AuditFixtures } from './audit-fixtures.js';
import { copyRun, eventOf, forge, indexOf, type Forgery } from './audit-forge.js';

const scratch = useScratch('audit');
let fx: AuditFixtures;

beforeAll(async () => {
  fx = await makeAuditFixtures(scratch);
});
afterAll(async () => {
  for (const s of fx.servers) await s.close();
});

type Kind = 'command' | 'signedCommand' | 'agent' | 'network' | 'approval';

async function audit(dir: string, signed = false): Promise<AuditResult> {
  const trustedKey = signed ? await loadTrustedKey(keyPaths(fx.keyDir).publicKey) : undefined;
  return auditRunDirectory(dir, { trustedKey });
}

const verdicts = (r: AuditResult): Record<string, string> =>
  Object.fromEntries(r.checks.map((c) => [c.id, c.verdict]));

describe('a fresh run of each kind passes the audit', () => {
  it.each(['command', 'signedCommand', 'agent', 'network', 'approval'] as const)(
    '%s',
    async (kind) => {
      const r = await audit(fx[kind], kind === 'signedCommand');
      const bad = r.checks.filter((c) => c.verdict === 'fail' || c.verdict === 'inconclusive');
      expect(bad, JSON.stringify(bad, null, 2)).toEqual([]);
      // The ledger is applied to fresh runs too: what it lists must still fail, nothing else may.
      const ledger = await auditRunDirectory(fx[kind], {
        trustedKey:
          kind === 'signedCommand'
            ? await loadTrustedKey(keyPaths(fx.keyDir).publicKey)
            : undefined,
        ledger: loadLedger(),
      });
      expect(ledger.ok, JSON.stringify(ledger.disappeared)).toBe(true);
      // Each kind exercises what it is for.
      const v = verdicts(r);
      if (kind === 'agent') expect(v['tools.one-result']).toBe('pass');
      if (kind === 'network') expect(v['egress.decided']).toBe('pass');
      if (kind === 'approval') expect(v['approvals.paired']).toBe('pass');
      if (kind === 'signedCommand') expect(v['integrity.signature']).toBe('pass');
      else expect(v['integrity.signature']).toBe('warn');
    },
  );
});

type Mutation = readonly [check: string, kind: Kind, change: (dir: string) => Promise<void>];

const forged =
  (edit: (f: Forgery) => void) =>
  (dir: string): Promise<void> =>
    forge(dir, edit);

/** The tool_result of `toolUseId` in a forged transcript, and its observation. */
function resultBlock(f: Forgery, toolUseId: string): Record<string, any> {
  for (const m of f.transcript ?? [])
    for (const b of m.content)
      if (b.type === 'tool_result' && b.tool_use_id === toolUseId) return b as Record<string, any>;
  throw new Error(`no tool_result for ${toolUseId}`);
}

const callData = (f: Forgery, type: string, callId: string): Record<string, any> =>
  eventOf(f, type, (d) => d.callId === callId);

// One mutation for every check whose evidence these fixtures carry. The CFC checks past the
// mode read evidence only an enforcing or observing agent run writes (these fixtures run with
// CFC disabled): their seeded violations are in unit/cfc-audit-checks.test.ts, and a real
// enforce-explicit run passes them in integration/cfc-audit.test.ts.
// lifecycle.pool reads what only a per-call run with a pool writes (these fixtures are
// per-run): its seeded violations are in unit/pool-audit-check.test.ts, and real pooled runs
// pass it in integration/tool-pool.test.ts.
// The resume link reads evidence only a resumed run writes: its mutation is in
// integration/resume.test.ts.
const DORMANT = [
  'lifecycle.pool',
  'resume.link',
  'cfc.flow-gated',
  'cfc.observations-labelled',
  'cfc.handles-before-policy',
  'cfc.prompt-authority',
  'cfc.evidence-boundary',
  // No fixture here compacts: its mutation is in test/integration/compaction.test.ts.
  'context.compaction-ordered',
  // Not applicable on these fixtures (no session); its failure is seeded on a real session's
  // run in serve-session.test.ts.
  'session.turns',
  // No fixture here delegates: its mutations are in audit-children.test.ts.
  'children.tree',
  // The re-derivations of CFC decisions and the children's CFC read evidence only an
  // enforcing run and a delegating one write: their rewrites are in audit-derive.test.ts.
  'cfc.flow-rederived',
  'cfc.influence-derived',
  'children.cfc',
];

const MUTATIONS: Mutation[] = [
  [
    'integrity.chain',
    'command',
    async (d) => {
      // The time of one event edited in place: its line no longer hashes to its hash.
      const file = path.join(d, 'events.jsonl');
      const text = await readFile(file, 'utf8');
      const lines = text.split('\n');
      const i = lines.findIndex((l) => l.includes('"container_started"'));
      lines[i] = (lines[i] ?? '').replace(/"ts":"[^"]+"/, '"ts":"2001-01-01T00:00:00.000Z"');
      await writeFile(file, lines.join('\n'));
    },
  ],
  [
    'integrity.anchor',
    'command',
    async (d) => {
      const file = path.join(d, 'report.json');
      await writeFile(
        file,
        (await readFile(file, 'utf8')).replace('"timings": {', '"timings": {\n    "forged": 1,'),
      );
    },
  ],
  [
    'integrity.digests',
    'agent',
    (d) => appendFile(path.join(d, 'outputs', 'call-0001.stdout'), 'x'),
  ],
  ['integrity.unaccounted', 'command', (d) => writeFile(path.join(d, 'outputs', 'planted'), 'p')],
  [
    'integrity.signature',
    'signedCommand',
    // Rewritten whole and re-sealed: chain, digests and anchors hold; the signature does not.
    forged((f) => {
      f.report.timings.totalMs = Number(f.report.timings.totalMs) + 1;
    }),
  ],
  [
    'evidence.schema',
    'command',
    forged((f) => void (eventOf(f, 'container_started').data.privileged = true)),
  ],
  [
    'lifecycle.terminal',
    'command',
    forged((f) => {
      eventOf(f, 'run_finished').data.terminalReason = 'exited_nonzero';
      f.state.terminalReason = 'exited_nonzero';
      f.report.terminalReason = 'exited_nonzero';
    }),
  ],
  [
    'lifecycle.limits',
    'command',
    forged((f) => void (eventOf(f, 'container_exited').data.stdout.truncated = true)),
  ],
  [
    'lifecycle.cleanup',
    'command',
    forged((f) => void f.events.splice(indexOf(f, 'container_removed'), 1)),
  ],
  [
    'lifecycle.calls-stopped',
    'agent',
    forged((f) => {
      // A stop recorded before the call's answer that says something of it went on running.
      const executed = callData(f, 'tool_executed', 'call-0001');
      const stop = {
        ...executed,
        type: 'tool_call_stopped',
        data: {
          callId: 'call-0001',
          tool: executed.data.tool,
          containerId: executed.data.containerId,
          reason: 'cancelled',
          method: 'session',
          session: 7,
          processes: 2,
          waitedMs: 5000,
          gone: false,
        },
      };
      f.events.splice(f.events.indexOf(executed), 0, stop);
    }),
  ],
  [
    'lifecycle.retries',
    'agent',
    forged((f) => void (callData(f, 'tool_executed', 'call-0001').data.attempts = 2)),
  ],
  [
    // AH-INV-5: one attempt on another route than the snapshot names.
    'model.one-route',
    'agent',
    forged((f) => {
      const started = f.events.find((e) => e['type'] === 'model_call_started');
      if (started !== undefined)
        started['data'].route = { ...started['data'].route, source: 'another-route' };
    }),
  ],
  [
    'snapshot.complete',
    'agent',
    forged((f) => {
      delete f.snapshot.workspace;
    }),
  ],
  [
    'cfc.mode-recorded',
    'command',
    forged((f) => {
      // Every run records its mode (AH-CFC-14): a report that speaks of CFC without it fails.
      delete f.snapshot.cfc;
    }),
  ],
  [
    'containers.hardening',
    'command',
    forged((f) => void (f.snapshot.containerSpec.capAdd = ['NET_ADMIN'])),
  ],
  [
    'assurance.recorded',
    'command',
    forged((f) => void (f.report.assurance = { level: 'reduced', notes: ['forged'] })),
  ],
  [
    'prompt.slots',
    'agent',
    forged((f) => void (f.snapshot.promptSlots.directCommand.digest = `sha256:${'0'.repeat(64)}`)),
  ],
  [
    'tools.surface',
    'agent',
    forged((f) => {
      (f.snapshot.tools as string[]).push('send_email');
    }),
  ],
  [
    'tools.one-result',
    'agent',
    forged(
      (f) =>
        void f.events.splice(
          indexOf(f, 'tool_executed', (d) => d.callId === 'call-0002'),
          1,
        ),
    ),
  ],
  [
    'tools.decision-first',
    'agent',
    forged((f) => {
      const i = indexOf(f, 'permission_decision', (d) => d.call_id === 'call-0005');
      const [decision] = f.events.splice(i, 1);
      if (decision === undefined) throw new Error('no decision');
      f.events.splice(
        indexOf(f, 'tool_executed', (d) => d.callId === 'call-0005') + 1,
        0,
        decision,
      );
    }),
  ],
  [
    'tools.failures-typed',
    'agent',
    forged((f) => {
      // The rejected call (a tool outside the surface) answered as if it had succeeded.
      const block = resultBlock(
        f,
        String(callData(f, 'tool_rejected', 'call-0003').data.toolUseId),
      );
      block.content = String(block.content).replace('"status":"error"', '"status":"success"');
      block.is_error = false;
    }),
  ],
  [
    'tools.transcript-paired',
    'agent',
    forged((f) => {
      const id = String(callData(f, 'tool_requested', 'call-0001').data.toolUseId);
      for (const m of f.transcript ?? [])
        m.content = (m.content as Record<string, unknown>[]).filter((b) => b.tool_use_id !== id);
    }),
  ],
  [
    'failures.classified',
    'command',
    forged((f) => void (f.report.error = { code: 'forged', boundary: 'engine', message: 'm' })),
  ],
  [
    'usage.as-reported',
    'agent',
    forged((f) => void (f.report.usage[0].usage.cache_creation_input_tokens = 0)),
  ],
  [
    'usage.cost',
    'agent',
    forged((f) => {
      f.report.costEstimate.total = 0;
    }),
  ],
  [
    'artifacts.confined',
    'command',
    // The snapshot records a mount that exposes the run directory to the sandbox. (An
    // evidence file made a link is not followed at all: it fails the digests too; see "raw
    // tampering".)
    forged((f) => {
      (f.snapshot.containerSpec.mounts as Record<string, string>[]).push({
        source: path.dirname(f.dir),
        target: '/evidence',
        mode: 'ro',
      });
    }),
  ],
  [
    'policy.rederived',
    'agent',
    // The reason of a decision rewritten: not what the profile's rule says.
    forged((f) => {
      eventOf(f, 'permission_decision', (d) => d.call_id === 'call-0001').data.reason =
        'the operator allowed it';
    }),
  ],
  [
    'approvals.paired',
    'approval',
    forged((f) => {
      f.events.splice(indexOf(f, 'approval_received'), 1);
    }),
  ],
  [
    'egress.decided',
    'network',
    forged((f) => {
      eventOf(f, 'egress', (d) => d.allowed === false && d.reason === 'denylisted').data.allowed =
        true;
    }),
  ],
];

describe('each seeded violation flips exactly its own check', () => {
  it('every check has a mutation or is dormant', () => {
    const covered = new Set([...MUTATIONS.map(([id]) => id), ...DORMANT]);
    expect(CHECKS.map((c) => c.id).filter((id) => !covered.has(id))).toEqual([]);
  });

  it.each(MUTATIONS)('%s (%s run)', async (check, kind, change) => {
    const signed = kind === 'signedCommand';
    const before = verdicts(await audit(fx[kind], signed));
    expect(before[check]).not.toBe('fail');
    const dir = await copyRun(fx[kind], scratch.path('mutations'));
    await change(dir);
    const after = await audit(dir, signed);
    const flipped = Object.keys(before).filter((id) => before[id] !== verdicts(after)[id]);
    expect(
      flipped,
      JSON.stringify(
        after.checks.filter((c) => flipped.includes(c.id)),
        null,
        2,
      ),
    ).toEqual([check]);
    const result = after.checks.find((c) => c.id === check);
    expect(result?.verdict).toBe('fail');
    expect(result?.where.length, result?.detail).toBeGreaterThan(0);
    expect(after.ok).toBe(false);
  });
});

describe('raw tampering fails with the place', () => {
  it('an output made a link to a file outside, same bytes: not followed, so neither digested nor confined', async () => {
    const dir = await copyRun(fx.command, scratch.path('tamper'));
    const outside = path.join(path.dirname(path.dirname(dir)), 'outside-stdout');
    await cp(path.join(dir, 'outputs', 'stdout'), outside);
    await rm(path.join(dir, 'outputs', 'stdout'));
    await symlink(outside, path.join(dir, 'outputs', 'stdout'));
    const r = await audit(dir);
    for (const id of ['integrity.digests', 'artifacts.confined']) {
      const c = r.checks.find((x) => x.id === id);
      expect(c?.verdict, id).toBe('fail');
      expect(c?.where.join('\n')).toMatch(/outputs\/stdout: a symbolic link, not followed/);
    }
  });

  it('a log cut short and state.json re-anchored: anchor and terminal state fail', async () => {
    const dir = await copyRun(fx.command, scratch.path('tamper'));
    const lines = (await readFile(path.join(dir, 'events.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '');
    const kept = lines.slice(0, -2);
    await writeFile(path.join(dir, 'events.jsonl'), `${kept.join('\n')}\n`);
    const last = JSON.parse(kept.at(-1) ?? '{}') as { seq: number; hash: string };
    const state = JSON.parse(await readFile(path.join(dir, 'state.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    await writeFile(
      path.join(dir, 'state.json'),
      JSON.stringify({ ...state, lastEvent: { seq: last.seq, hash: last.hash } }),
    );
    const v = verdicts(await audit(dir));
    expect(v['integrity.anchor']).toBe('fail');
    expect(v['lifecycle.terminal']).toBe('fail');
  });

  it('an event appended after run_finished, chained correctly: the log was extended', async () => {
    const dir = await copyRun(fx.command, scratch.path('tamper'));
    const lines = (await readFile(path.join(dir, 'events.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '');
    const last = JSON.parse(lines.at(-1) ?? '{}') as Record<string, any>;
    const base = {
      schema: 'cfh.event/1',
      seq: Number(last.seq) + 1,
      ts: new Date().toISOString(),
      runId: last.runId,
      type: 'container_started',
      data: { containerId: 'x' },
      prevHash: last.hash,
    };
    await appendFile(
      path.join(dir, 'events.jsonl'),
      `${JSON.stringify({ ...base, hash: hashEvent(base) })}\n`,
    );
    const r = await audit(dir);
    const anchor = r.checks.find((c) => c.id === 'integrity.anchor');
    expect(anchor?.verdict).toBe('fail');
    expect(anchor?.where.join('\n')).toMatch(/events follow run_finished.*extended/);
  });

  it('a signed run whose signature was removed fails when signing is configured', async () => {
    const dir = await copyRun(fx.signedCommand, scratch.path('tamper'));
    await rm(path.join(dir, 'signature.json'));
    expect(verdicts(await audit(dir, true))['integrity.signature']).toBe('fail');
  });

  it('a report edited in a field no other document repeats: its digest in run_finished fails', async () => {
    const dir = await copyRun(fx.agent, scratch.path('tamper'));
    const file = path.join(dir, 'report.json');
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('"finalAnswer": "Done.', '"finalAnswer": "Forged.'),
    );
    const anchor = (await audit(dir)).checks.find((c) => c.id === 'integrity.anchor');
    expect(anchor?.where.join('\n')).toMatch(/report\.json: its digest differs/);
  });
});

describe('the expected-failures ledger', () => {
  const entry = (check: string) => ({
    check,
    kinds: ['command' as const],
    reason: 'r',
    retire: 'r',
  });

  it('an expected failure passes the audit; one that disappeared fails it', async () => {
    const dir = await copyRun(fx.command, scratch.path('ledger'));
    await writeFile(path.join(dir, 'outputs', 'planted'), 'p');
    const known = await auditRunDirectory(dir, { ledger: [entry('integrity.unaccounted')] });
    expect(known.ok).toBe(true);
    expect(known.expected).toEqual(['integrity.unaccounted']);
    const gone = await auditRunDirectory(fx.command, { ledger: [entry('integrity.unaccounted')] });
    expect(gone.ok).toBe(false);
    expect(gone.disappeared).toEqual(['integrity.unaccounted']);
    const other = await auditRunDirectory(dir, { ledger: [entry('integrity.chain')] });
    expect(other.ok).toBe(false);
  });
});

describe('the operator key stays outside every mount and artifact root', () => {
  it('refuses a run whose workspace or artifact root would expose the key, before anything exists', async () => {
    const ws = await scratch.sampleRepo();
    const keyDir = path.join(ws, '.keys');
    expect((await cfh(['keys', 'init'], { env: { CFH_KEY_DIR: keyDir } })).exitCode).toBe(0);
    // A second init never overwrites a key.
    const again = await cfh(['keys', 'init'], { env: { CFH_KEY_DIR: keyDir } });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
    const root = scratch.path('exposed-art');
    const r = await cfh(
      ['sandbox', 'run', '--workspace', ws, '--artifact-root', root, '--', 'true'],
      {
        env: { CFH_KEY_DIR: keyDir },
      },
    );
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/operator key directory .* readable in the sandbox/);
    const inRoot = scratch.path('art-with-keys');
    const keysInRoot = path.join(inRoot, 'keys');
    expect(
      (
        await cfh(['keys', 'init'], {
          env: { CFH_KEY_DIR: keysInRoot, CFH_ARTIFACT_ROOT: scratch.path('elsewhere') },
        })
      ).exitCode,
    ).toBe(0);
    const ws2 = await scratch.sampleRepo();
    const r2 = await cfh(
      ['sandbox', 'run', '--workspace', ws2, '--artifact-root', inRoot, '--', 'true'],
      {
        env: { CFH_KEY_DIR: keysInRoot },
      },
    );
    expect(r2.exitCode).toBe(125);
    expect(r2.stderr).toMatch(/inside the artifact root/);
    expect((await readdir(root).catch(() => [])).length).toBe(0);
    // keys init itself refuses a key directory under the artifact root.
    const init = await cfh(['keys', 'init'], {
      env: { CFH_KEY_DIR: path.join(inRoot, 'more'), CFH_ARTIFACT_ROOT: inRoot },
    });
    expect(init.exitCode).toBe(1);
  });
});

describe('cfh audit, the command', () => {
  it('exit 0 on a fresh run, 1 on a failure, 2 when nothing can be read; --json and --strict', async () => {
    const root = path.dirname(fx.command);
    const ok = await cfh(['audit', '--artifact-root', root, runIdOf(fx.command)]);
    expect(ok.exitCode, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^pass integrity\.chain/m);
    const strict = await cfh(['audit', '--strict', fx.command]);
    expect(strict.exitCode).toBe(1); // unsigned: a warn
    const dir = await copyRun(fx.command, scratch.path('cli'));
    await writeFile(path.join(dir, 'outputs', 'planted'), 'p');
    const bad = await cfh(['audit', '--json', dir]);
    expect(bad.exitCode).toBe(1);
    const parsed = JSON.parse(bad.stdout) as AuditResult;
    expect(parsed.checks.find((c) => c.id === 'integrity.unaccounted')?.where).toEqual([
      'outputs/planted: in the directory, but no record accounts for it',
    ]);
    await rm(path.join(dir, 'events.jsonl'));
    expect((await cfh(['audit', dir])).exitCode).toBe(2);
    expect(
      (await cfh(['audit', '--artifact-root', root, '20000101T000000Z-00000000'])).exitCode,
    ).toBe(2);
  });

  it('--manifest reconciles the manifest with the checks', async () => {
    const r = await cfh(['audit', '--manifest']);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^reconciled: \d+ obligations, \d+ checks$/m);
  });
});
