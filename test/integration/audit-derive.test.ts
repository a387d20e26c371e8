// `cfh audit` proves, not just matches: on real runs (audit-derive-fixtures.ts), evidence
// rewritten whole and re-sealed (every digest, the chain, the report digest, both anchors and
// the report's CFC counts made consistent again: audit-forge.ts) fails with the check that
// decides the rewritten record again: a denied flow's record dropped (cfc.flow-gated), a
// usage counter removed from the log and the report (usage.cost), a flow judged with secret
// influence into a sink cleared for nothing marked allow (cfc.flow-rederived), a decision
// turned into allow (policy.rederived), an influence that forgets what the model saw
// (cfc.influence-derived), and each cfc.*, resume, session and children check on its own
// kind of run. Each test names the exact checks that fail.
import { cp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { auditRunDirectory, type AuditResult } from '../../src/evidence/audit/audit.js';
import { summarizeCfc } from '../../src/evidence/cfc-summary.js';
import { copyRun, eventOf, forge, indexOf, type Forgery } from './audit-forge.js';
import { makeDeriveFixtures, type DeriveFixtures } from './audit-derive-fixtures.js';
import { useScratch } from './helpers.js';

const scratch = useScratch('audit-derive');
let fx: DeriveFixtures;

beforeAll(async () => {
  fx = await makeDeriveFixtures(scratch);
}, 240_000);

const failing = (r: AuditResult): string[] =>
  r.checks.filter((c) => c.verdict === 'fail').map((c) => c.id);
const where = (r: AuditResult, id: string): string =>
  r.checks.find((c) => c.id === id)?.where.join('\n') ?? '';

/** The report's CFC counts as the forged log has them: the rewrite stays consistent. */
function recount(f: Forgery): void {
  f.report.cfc = summarizeCfc(f.report.cfc.mode, cfcEvents(f));
}

const cfcEvents = (f: Forgery) => f.events.map((e) => ({ type: String(e.type), data: e.data }));

/** A copy of `run` rewritten by `edit` and re-sealed, audited (a resumed one beside its old run). */
async function forged(run: string, edit: (f: Forgery) => void): Promise<AuditResult> {
  const dir = await copyRun(run, scratch.path('forged'));
  if (run === fx.resumed)
    await cp(fx.cfc, path.join(path.dirname(dir), path.basename(fx.cfc)), { recursive: true });
  await forge(dir, (f) => {
    edit(f);
    if (f.report.cfc !== undefined) recount(f);
  });
  return auditRunDirectory(dir);
}

const flowOf = (f: Forgery, callId: string) => eventOf(f, 'cfc_flow', (d) => d.callId === callId);

describe('the fixtures pass every check, the re-derivations judging every record', () => {
  it.each(['cfc', 'resumed', 'session', 'parent'] as const)('%s', async (kind) => {
    const r = await auditRunDirectory(fx[kind]);
    const bad = r.checks.filter((c) => c.verdict === 'fail' || c.verdict === 'inconclusive');
    expect(bad, JSON.stringify(bad, null, 2)).toEqual([]);
    if (kind !== 'cfc') return;
    const detail = (id: string) => r.checks.find((c) => c.id === id)?.detail;
    expect(detail('cfc.flow-rederived')).toBe('7 flow decision(s) judged again, each as recorded');
    expect(detail('policy.rederived')).toBe('7 decision(s) decided again, each as recorded');
    expect(detail('cfc.influence-derived')).toMatch(/^10 influence\(s\) derived/);
    expect(detail('usage.cost')).toMatch(/^estimate [0-9.]+ USD from rate card/);
  });
});

describe('the three rewrites an independent review made, each caught', () => {
  it("(a) a denied flow's cfc_flow record dropped: cfc.flow-gated", async () => {
    const r = await forged(
      fx.cfc,
      (f) =>
        void f.events.splice(
          indexOf(f, 'cfc_flow', (d) => d.callId === 'call-0005'),
          1,
        ),
    );
    expect(failing(r)).toEqual(['policy.rederived', 'cfc.flow-gated']);
    expect(where(r, 'cfc.flow-gated')).toMatch(
      /permission_decision\): call-0005 \(write_file\) was decided with no flow decision before it/,
    );
  });

  it('(b) a usage counter removed from the events and report.json: usage.cost', async () => {
    const r = await forged(fx.cfc, (f) => {
      delete eventOf(f, 'model_call_completed').data.usage.cache_read_input_tokens;
      delete f.report.usage[0].usage.cache_read_input_tokens;
    });
    expect(failing(r)).toEqual(['usage.cost']);
    expect(where(r, 'usage.cost')).toMatch(
      /model_call_completed\): estimate \{"attemptId":"turn-1","estimated":[0-9.]+\}, its counters price at \{"attemptId":"turn-1","estimated":[0-9.]+\}/,
    );
  });

  it('(c) a flow with secret influence into a sink cleared for nothing, marked allow: cfc.flow-rederived', async () => {
    const r = await forged(fx.cfc, (f) => {
      const d = flowOf(f, 'call-0005').data;
      expect(d.influence.confidentiality).toEqual(['secret']);
      expect(d.sinks).toEqual([{ sink: 'mount /workspace', clearance: [], requires: [] }]);
      Object.assign(d, {
        verdict: 'allow',
        rule: 'cfc:allow',
        reason: 'the flow is allowed',
        violations: [],
      });
    });
    expect(failing(r)).toEqual(['policy.rederived', 'cfc.flow-rederived']);
    expect(where(r, 'cfc.flow-rederived')).toMatch(
      /call-0005 \(write_file\) verdict allow, judged deny; rule cfc:allow, judged cfc:clearance; violations \[\], judged \[\{"sink":"mount \/workspace","uncleared":\["secret"\],"missing":\[\]\}\]/,
    );
  });
});

describe('each re-derivation and each cfc.* check on a real run', () => {
  it('policy.rederived: a refused decision rewritten to allow', async () => {
    const r = await forged(fx.cfc, (f) => {
      Object.assign(eventOf(f, 'permission_decision', (d) => d.call_id === 'call-0005').data, {
        decision: 'allow',
        policy_rule: 'default:write_local',
        reason: "write_file writes only inside the sandbox's own mounts",
      });
    });
    expect(failing(r)).toContain('policy.rederived');
    expect(where(r, 'policy.rederived')).toMatch(
      /call-0005 allow under default:write_local, decided again approval_required under cfc:clearance/,
    );
  });

  it('cfc.influence-derived: a turn whose influence forgot the secret the model saw', async () => {
    const r = await forged(fx.cfc, (f) => {
      eventOf(f, 'cfc_influence', (d) => d.turn === 2).data.label = {
        confidentiality: [],
        integrity: [],
      };
    });
    expect(failing(r)).toEqual(['cfc.influence-derived', 'cfc.observations-labelled']);
    expect(where(r, 'cfc.influence-derived')).toMatch(
      /cfc_influence\): influence \{"confidentiality":\[\],"integrity":\[\]\}, the log implies \{"confidentiality":\["secret"\],"integrity":\[\]\}/,
    );
  });

  it('cfc.influence-derived: a resumed run that started without the context it carries', async () => {
    const r = await forged(fx.resumed, (f) => {
      eventOf(f, 'cfc_influence').data.label = { confidentiality: [], integrity: [] };
    });
    expect(failing(r)).toEqual(['cfc.influence-derived']);
    expect(where(r, 'cfc.influence-derived')).toMatch(
      /weaker than the run's start \{"confidentiality":\["secret"\],"integrity":\[\]\}/,
    );
  });

  it('cfc.observations-labelled: an exposed observation whose label was dropped', async () => {
    const r = await forged(
      fx.cfc,
      (f) =>
        void f.events.splice(
          indexOf(f, 'cfc_label', (d) => d.callId === 'call-0002'),
          1,
        ),
    );
    expect(failing(r)).toEqual(['cfc.observations-labelled']);
    expect(where(r, 'cfc.observations-labelled')).toMatch(
      /call-0002's observation reached the model .* without a label/,
    );
  });

  it('cfc.handles-before-policy: a handle resolved with another label than held', async () => {
    const r = await forged(fx.cfc, (f) => {
      eventOf(f, 'cfc_handle', (d) => d.action === 'resolved').data.label = {
        confidentiality: [],
        integrity: [],
      };
    });
    expect(failing(r)).toContain('cfc.handles-before-policy');
    expect(where(r, 'cfc.handles-before-policy')).toMatch(
      /cfh-val:[a-z2-7]{20} resolved with another label than held/,
    );
  });

  it('cfc.prompt-authority: a capture of another text than the direct command', async () => {
    const r = await forged(fx.cfc, (f) => {
      eventOf(f, 'prompt_captured').data.sha256 = 'e'.repeat(64);
    });
    expect(failing(r)).toEqual(['cfc.prompt-authority']);
    expect(where(r, 'cfc.prompt-authority')).toMatch(
      /captured a value other than the direct command/,
    );
  });

  it('cfc.evidence-boundary: a handle table recorded into the run', async () => {
    const r = await forged(fx.cfc, (f) => {
      f.files.set('outputs/handles.json', '{"cfh-val:abcdefghijklmnopqrst":"k3y"}\n');
      f.events.splice(indexOf(f, 'run_finished'), 0, {
        ...eventOf(f, 'artifact_written'),
        data: { file: 'outputs/handles.json', sha256: '', bytes: 0 },
      });
    });
    expect(failing(r)).toEqual(['cfc.evidence-boundary']);
    expect(where(r, 'cfc.evidence-boundary')).toBe(
      'outputs/handles.json: a handle table kept outside cfc-handles/',
    );
  });

  it('cfc.mode-recorded: the report calls the run observe', async () => {
    const dir = await copyRun(fx.cfc, scratch.path('forged'));
    await forge(dir, (f) => {
      f.report.cfc = { ...summarizeCfc('observe', cfcEvents(f)), mode: 'observe', enforced: false };
    });
    const r = await auditRunDirectory(dir);
    expect(failing(r)).toEqual(['cfc.mode-recorded']);
  });
});

describe('resume, session and children checks on real runs, re-sealed', () => {
  it('resume.link: the link rewritten to another final hash in snapshot and run_resumed', async () => {
    const r = await forged(fx.resumed, (f) => {
      const other = 'a'.repeat(64);
      f.snapshot.resumedFrom.finalHash = other;
      eventOf(f, 'run_resumed').data.finalHash = other;
    });
    expect(failing(r)).toEqual(['resume.link']);
    expect(where(r, 'resume.link')).toMatch(/hash is not the link's finalHash/);
  });

  it('session.turns: a turn_started that digests another direct command', async () => {
    const r = await forged(fx.session, (f) => {
      eventOf(f, 'turn_started').data.prompt.digest = `sha256:${'b'.repeat(64)}`;
    });
    expect(failing(r)).toEqual(['session.turns']);
  });

  /** The parent and its child both rewritten, the parent's child_finished re-pointed. */
  async function forgedChild(edit: (child: Forgery) => void): Promise<AuditResult> {
    const dir = await copyRun(fx.parent, scratch.path('forged-tree'));
    const child = path.join(dir, 'children', fx.childId);
    await forge(child, edit);
    const lines = (await readFile(path.join(child, 'events.jsonl'), 'utf8')).trimEnd().split('\n');
    const last = JSON.parse(lines.at(-1) ?? '{}') as { hash: string };
    await forge(dir, (f) => {
      Object.assign(eventOf(f, 'child_finished').data, {
        finalHash: last.hash,
        events: lines.length,
      });
    });
    return auditRunDirectory(dir);
  }

  it("children.cfc: a child's model cleared above its ceiling", async () => {
    const r = await forgedChild((c) => void (c.snapshot.cfc.modelClearance = ['secret']));
    expect(failing(r)).toEqual(['children.cfc']);
    expect(where(r, 'children.cfc')).toBe(
      `child ${fx.childId} (reviewer, ceiling []): modelClearance [secret]`,
    );
  });

  it("children.cfc: a child's CFC mode weaker than its parent's", async () => {
    const r = await forgedChild((c) => {
      c.snapshot.cfc.mode = 'disabled';
      c.report.cfc = summarizeCfc('disabled', []);
      c.events = c.events.filter(
        (e) => !String(e.type).startsWith('cfc_') && e.type !== 'prompt_captured',
      );
    });
    expect(failing(r)).toContain('children.cfc');
    expect(where(r, 'children.cfc')).toContain(
      `child ${fx.childId}: CFC disabled, weaker than its parent's enforce-explicit`,
    );
  });

  it('children.tree: the child run removed', async () => {
    const dir = await copyRun(fx.parent, scratch.path('forged-tree'));
    await rm(path.join(dir, 'children', fx.childId), { recursive: true });
    const r = await auditRunDirectory(dir);
    expect(failing(r)).toEqual(['children.tree']);
  });
});
