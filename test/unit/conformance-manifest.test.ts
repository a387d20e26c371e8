// The conformance manifest (conformance/manifest.yaml) and the audit checks agree in both
// directions, docs/conformance.md holds the table generated from it, and every clause id of
// the specifications (when the shared spec directory is present) has an entry.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../src/evidence/audit/checks.js';
import { loadLedger } from '../../src/evidence/audit/ledger.js';
import {
  loadManifest,
  manifestMarkdown,
  MARKDOWN_BEGIN,
  MARKDOWN_END,
  reconcile,
} from '../../src/evidence/audit/manifest.js';

const SPEC_DIR = path.resolve('..', 'shared', 'spec');

describe('conformance manifest', () => {
  it('reconciles with the checks: each check covers its declared clauses, each audited obligation has a check', () => {
    const rec = reconcile(loadManifest(), CHECKS);
    expect(rec.problems).toEqual([]);
  });

  it('fails the reconciliation when a check declares a clause the manifest does not give it', () => {
    const first = CHECKS[0];
    if (first === undefined) throw new Error('no check');
    const altered = [{ ...first, clauses: [...first.clauses, 'AH-INV-5'] }, ...CHECKS.slice(1)];
    expect(reconcile(loadManifest(), altered).problems).toEqual([
      `${first.id}: declares AH-INV-5, which the manifest does not give it`,
    ]);
  });

  it('docs/conformance.md holds the table generated from the manifest', () => {
    const doc = readFileSync(path.join('docs', 'conformance.md'), 'utf8');
    const start = doc.indexOf(MARKDOWN_BEGIN);
    const end = doc.indexOf(MARKDOWN_END);
    expect(start, 'markers missing: run cfh audit --manifest --markdown').toBeGreaterThanOrEqual(0);
    expect(doc.slice(start, end + MARKDOWN_END.length)).toBe(
      manifestMarkdown(loadManifest(), CHECKS),
    );
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
    const listed = new Set(loadManifest().map((o) => o.id));
    expect([...ids].filter((id) => !listed.has(id))).toEqual([]);
  });

  it('the expected-failures ledger names only checks that exist', () => {
    const ids = new Set(CHECKS.map((c) => c.id));
    expect(loadLedger().filter((e) => !ids.has(e.check))).toEqual([]);
  });
});
