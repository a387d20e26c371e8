// The conformance manifest (conformance/manifest.yaml), the one source of every conformance
// claim: each obligation's status, the checks of `cfh audit` that cover it, and what is
// claimed for it (mechanism, the tests that prove it, the published deviations it has).
// reconcile() holds it to the checks in both directions (every check covers an obligation,
// every audited obligation has a check, the clauses a check declares are exactly the
// obligations that name it) and to itself (no claim for what is not advertised, no
// by-construction obligation without a claim). docs/conformance.md's clause tables are
// rendered from it (manifest-doc.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../paths.js';
import type { Check } from './check.js';

const OBLIGATION_ID = /(?:AH|AHGE|CFH)-[A-Z]+-\d+[a-z]?/;
const ObligationId = z.string().regex(new RegExp(`^${OBLIGATION_ID.source}$`));

const proofFields = {
  // Test titles (or, for a document, words of it), abbreviated with `…`: every piece
  // between ellipses must occur in the file (test/unit/conformance-manifest.test.ts).
  names: z.array(z.string().min(1)).optional(),
  detail: z.string().min(1).optional(),
};
/** A test file under test/, or a document of the repository, that proves a claim. */
export const Proof = z.union([
  z.strictObject({
    test: z.string().regex(/^(unit|integration)\/[\w/.-]+\.test\.ts$/),
    ...proofFields,
  }),
  z.strictObject({ doc: z.string().regex(/^docs\/[\w/.-]+\.md$/), ...proofFields }),
]);
export type Proof = z.infer<typeof Proof>;

/** One row of a clause table: an aspect of an obligation, how it is met and proved. */
export const Claim = z.strictObject({
  section: z.string().min(1),
  aspect: z.string().min(1).optional(),
  // Further obligations the same mechanism meets (rendered `AH-TOOL-1/2`).
  also: z.array(ObligationId).optional(),
  mechanism: z.string().min(1),
  provedBy: z.array(Proof).min(1),
  // Bold titles of published deviations in docs/conformance.md that limit this claim.
  deviations: z.array(z.string().min(1)).optional(),
});
export type Claim = z.infer<typeof Claim>;

export const Obligation = z.strictObject({
  id: ObligationId,
  title: z.string().min(1),
  status: z.enum(['audited', 'by-construction', 'not-auditable', 'not-advertised']),
  checks: z.array(z.string()).optional(),
  note: z.string().optional(),
  claims: z.array(Claim).optional(),
});
export type Obligation = z.infer<typeof Obligation>;

/** A clause table of docs/conformance.md: its marker id and what it is about. */
export const Section = z.strictObject({
  id: z.string().regex(/^[a-z][a-z-]*$/),
  title: z.string().min(1),
});
export type Section = z.infer<typeof Section>;

export const Manifest = z.strictObject({
  schema: z.literal('cfh.conformance-manifest/2'),
  sections: z.array(Section),
  obligations: z.array(Obligation),
});
export type Manifest = z.infer<typeof Manifest>;

export const MANIFEST_FILE = path.join(PACKAGE_ROOT, 'conformance', 'manifest.yaml');

export function loadManifest(file = MANIFEST_FILE): Manifest {
  const parsed = Manifest.safeParse(parse(readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new ConfigError(
      'manifest_invalid',
      `conformance manifest ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

export interface Reconciliation {
  readonly ok: boolean;
  readonly problems: readonly string[];
  readonly rows: readonly { obligation: Obligation; checks: readonly string[] }[];
}

export function reconcile(manifest: Manifest, checks: readonly Check[]): Reconciliation {
  const { obligations } = manifest;
  const problems = [...checkProblems(obligations, checks), ...claimProblems(manifest)];
  return {
    ok: problems.length === 0,
    problems,
    rows: obligations.map((o) => ({ obligation: o, checks: o.checks ?? [] })),
  };
}

function checkProblems(obligations: readonly Obligation[], checks: readonly Check[]): string[] {
  const problems: string[] = [];
  const byId = new Map(checks.map((c) => [c.id, c]));
  const seen = new Set<string>();
  const covering = new Map<string, Set<string>>();
  for (const o of obligations) {
    if (seen.has(o.id)) problems.push(`${o.id}: listed twice`);
    seen.add(o.id);
    const list = o.checks ?? [];
    if (o.status === 'audited' && list.length === 0)
      problems.push(`${o.id}: audited, but names no check`);
    if (o.status !== 'audited' && list.length > 0)
      problems.push(`${o.id}: ${o.status}, yet names checks`);
    for (const id of list) {
      if (!byId.has(id)) problems.push(`${o.id}: names ${id}, which is no check`);
      const set = covering.get(id) ?? new Set<string>();
      set.add(o.id);
      covering.set(id, set);
    }
  }
  for (const c of checks) {
    const listed = covering.get(c.id) ?? new Set<string>();
    if (listed.size === 0) problems.push(`${c.id}: covers no obligation of the manifest`);
    for (const clause of c.clauses)
      if (!listed.has(clause))
        problems.push(`${c.id}: declares ${clause}, which the manifest does not give it`);
    for (const clause of listed)
      if (!c.clauses.includes(clause))
        problems.push(`${c.id}: the manifest gives it ${clause}, which it does not declare`);
  }
  return problems;
}

// A claim is what the statement promises: nothing may be claimed for an obligation this
// release does not advertise (not even in another claim's words), and every obligation
// that no audit check covers must say how it is met and which test proves it.
function claimProblems(manifest: Manifest): string[] {
  const problems: string[] = [];
  const status = new Map(manifest.obligations.map((o) => [o.id, o.status]));
  const sections = new Set(manifest.sections.map((s) => s.id));
  const used = new Set<string>();
  for (const o of manifest.obligations) {
    const claims = o.claims ?? [];
    if (o.status === 'not-advertised' && claims.length > 0)
      problems.push(`${o.id}: not-advertised, yet claimed`);
    if ((o.status === 'by-construction' || o.status === 'not-auditable') && claims.length === 0)
      problems.push(`${o.id}: ${o.status}, but claims no mechanism and no test`);
    for (const c of claims) {
      used.add(c.section);
      if (!sections.has(c.section)) problems.push(`${o.id}: claim in unknown section ${c.section}`);
      for (const id of c.also ?? []) {
        const s = status.get(id);
        if (s === undefined || id === o.id)
          problems.push(`${o.id}: a claim also names ${id}, no other obligation`);
        else if (s === 'not-advertised')
          problems.push(`${o.id}: a claim also names ${id}, which is not advertised`);
      }
      for (const m of c.mechanism.matchAll(new RegExp(OBLIGATION_ID.source, 'g')))
        if (status.get(m[0]) === 'not-advertised')
          problems.push(`${o.id}: a claim's mechanism cites ${m[0]}, which is not advertised`);
    }
  }
  for (const s of sections) if (!used.has(s)) problems.push(`section ${s}: holds no claim`);
  return problems;
}
