// The conformance manifest (conformance/manifest.yaml) is the one source of every claim:
// it agrees with the audit checks in both directions, docs/conformance.md holds exactly the
// blocks rendered from it and no clause row of its own, every test and document a claim
// cites exists and holds the test titles it names, every deviation a claim names is
// published, and every clause id of the specifications (when the shared spec directory is
// present) has an entry.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../src/evidence/audit/checks.js';
import { loadLedger } from '../../src/evidence/audit/ledger.js';
import { loadManifest, reconcile, type Manifest } from '../../src/evidence/audit/manifest.js';
import {
  handWrittenClauseRows,
  manifestBlocks,
  regenerate,
} from '../../src/evidence/audit/manifest-doc.js';

const SPEC_DIR = path.resolve('..', 'shared', 'spec');
const DOC = path.join('docs', 'conformance.md');

// What a claim cites that is not there: a missing file, or a title fragment (the pieces
// between `…`) the file does not contain. Quotes escaped in the source count as written.
function proofProblems(manifest: Manifest): string[] {
  const problems: string[] = [];
  for (const o of manifest.obligations)
    for (const c of o.claims ?? [])
      for (const p of c.provedBy) {
        const file = 'test' in p ? path.join('test', p.test) : p.doc;
        if (!existsSync(file)) {
          problems.push(`${o.id}: ${file} does not exist`);
          continue;
        }
        const text = readFileSync(file, 'utf8').replace(/\\(['"`])/g, '$1');
        for (const name of p.names ?? [])
          for (const piece of name.split('…').map((s) => s.trim()))
            if (piece !== '' && !text.includes(piece))
              problems.push(`${o.id}: ${file} has no "${piece}"`);
      }
  return problems;
}

// Deviations are the bold-titled items the document publishes by hand.
function deviationProblems(manifest: Manifest, doc: string): string[] {
  const published = new Set(
    [...doc.matchAll(/^\s*- \*\*(.+?)\.?\*\*/gm)].map((m) => (m[1] ?? '').replace(/\.$/, '')),
  );
  return manifest.obligations.flatMap((o) =>
    (o.claims ?? []).flatMap((c) =>
      (c.deviations ?? [])
        .filter((d) => !published.has(d))
        .map((d) => `${o.id}: no published deviation "${d}"`),
    ),
  );
}

function withObligation(manifest: Manifest, id: string, change: object): Manifest {
  return {
    ...manifest,
    obligations: manifest.obligations.map((o) => (o.id === id ? { ...o, ...change } : o)),
  };
}

describe('conformance manifest', () => {
  const manifest = loadManifest();

  it('reconciles with the checks: each check covers its declared clauses, each audited obligation has a check', () => {
    expect(reconcile(manifest, CHECKS).problems).toEqual([]);
  });

  it('fails the reconciliation when a check declares a clause the manifest does not give it', () => {
    const first = CHECKS[0];
    if (first === undefined) throw new Error('no check');
    const altered = [{ ...first, clauses: [...first.clauses, 'AH-INV-5'] }, ...CHECKS.slice(1)];
    expect(reconcile(manifest, altered).problems).toEqual([
      `${first.id}: declares AH-INV-5, which the manifest does not give it`,
    ]);
  });

  it('fails a claim for what is not advertised, and a by-construction obligation without one', () => {
    const claim = manifest.obligations.find((o) => o.id === 'AH-TOOL-10')?.claims?.[0];
    if (claim === undefined) throw new Error('AH-TOOL-10 has no claim');
    expect(
      reconcile(withObligation(manifest, 'AH-DIAG-4', { claims: [claim] }), CHECKS).problems,
    ).toEqual(['AH-DIAG-4: not-advertised, yet claimed']);
    expect(
      reconcile(withObligation(manifest, 'AH-CONT-1', { claims: [] }), CHECKS).problems,
    ).toEqual(['AH-CONT-1: by-construction, but claims no mechanism and no test']);
    const citing = { ...claim, mechanism: `${claim.mechanism} (AH-DIAG-4)`, also: ['AH-OBS-2'] };
    expect(
      reconcile(withObligation(manifest, 'AH-TOOL-10', { claims: [citing] }), CHECKS).problems,
    ).toEqual([
      'AH-TOOL-10: a claim also names AH-OBS-2, which is not advertised',
      "AH-TOOL-10: a claim's mechanism cites AH-DIAG-4, which is not advertised",
    ]);
  });

  it('docs/conformance.md holds exactly the blocks the manifest renders', () => {
    const doc = readFileSync(DOC, 'utf8');
    const { text, problems } = regenerate(doc, manifestBlocks(manifest, CHECKS));
    expect(problems).toEqual([]);
    // A difference: run `npm run conformance-doc` (it writes the blocks from the manifest).
    expect(text === doc, 'docs/conformance.md differs from the manifest').toBe(true);
  });

  it('docs/conformance.md has no clause row outside the generated blocks', () => {
    const doc = readFileSync(DOC, 'utf8');
    expect(handWrittenClauseRows(doc)).toEqual([]);
    const planted = doc.replace(
      '## Roles',
      '| AH-INV-5 no reroute | claimed by hand |\n\n## Roles',
    );
    expect(handWrittenClauseRows(planted)).toEqual(['| AH-INV-5 no reroute | claimed by hand |']);
  });

  it('every test and document a claim cites exists, with the titles it names', () => {
    expect(proofProblems(manifest)).toEqual([]);
    const inv1 = manifest.obligations.find((o) => o.id === 'AH-INV-1');
    const claim = inv1?.claims?.[0];
    if (claim === undefined) throw new Error('AH-INV-1 has no claim');
    const broken = withObligation(manifest, 'AH-INV-1', {
      claims: [
        {
          ...claim,
          provedBy: [
            { test: 'integration/no-such.test.ts' },
            { test: 'integration/sandbox-run.test.ts', names: ['records snapshot…no such title'] },
          ],
        },
      ],
    });
    expect(proofProblems(broken)).toEqual([
      'AH-INV-1: test/integration/no-such.test.ts does not exist',
      'AH-INV-1: test/integration/sandbox-run.test.ts has no "no such title"',
    ]);
  });

  it('every deviation a claim names is published in docs/conformance.md', () => {
    expect(deviationProblems(manifest, readFileSync(DOC, 'utf8'))).toEqual([]);
  });

  it('lists every clause id of the specifications', (ctx) => {
    if (!existsSync(SPEC_DIR)) {
      ctx.skip();
      return;
    }
    const ids = new Set<string>();
    for (const f of readdirSync(SPEC_DIR))
      for (const m of readFileSync(path.join(SPEC_DIR, f), 'utf8').matchAll(
        /\*\*(AH-[A-Z]+-\d+[a-z]?)\.\*\*/g,
      ))
        if (m[1] !== undefined) ids.add(m[1]);
    const listed = new Set(manifest.obligations.map((o) => o.id));
    expect([...ids].filter((id) => !listed.has(id))).toEqual([]);
  });

  it('the expected-failures ledger names only checks that exist', () => {
    const ids = new Set(CHECKS.map((c) => c.id));
    expect(loadLedger().filter((e) => !ids.has(e.check))).toEqual([]);
  });
});
