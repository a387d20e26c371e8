// The conformance manifest (conformance/manifest.yaml) and its reconciliation with the
// checks: every check covers an obligation, every audited obligation has a check, and the
// clauses a check declares are exactly the obligations that name it. docs/conformance.md's
// "Audit checks" section is rendered from the same data (manifestMarkdown).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import { PACKAGE_ROOT } from '../../paths.js';
import type { Check } from './check.js';

export const Obligation = z.strictObject({
  id: z.string().regex(/^(AH|AHGE|CFH)-[A-Z]+-\d+[a-z]?$/),
  title: z.string().min(1),
  status: z.enum(['audited', 'by-construction', 'not-auditable', 'not-advertised']),
  checks: z.array(z.string()).optional(),
  note: z.string().optional(),
});
export type Obligation = z.infer<typeof Obligation>;

export const Manifest = z.strictObject({
  schema: z.literal('cfh.conformance-manifest/1'),
  obligations: z.array(Obligation),
});

export const MANIFEST_FILE = path.join(PACKAGE_ROOT, 'conformance', 'manifest.yaml');

export function loadManifest(file = MANIFEST_FILE): Obligation[] {
  const parsed = Manifest.safeParse(parse(readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new ConfigError(
      'manifest_invalid',
      `conformance manifest ${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data.obligations;
}

export interface Reconciliation {
  readonly ok: boolean;
  readonly problems: readonly string[];
  readonly rows: readonly { obligation: Obligation; checks: readonly string[] }[];
}

export function reconcile(
  obligations: readonly Obligation[],
  checks: readonly Check[],
): Reconciliation {
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
  return {
    ok: problems.length === 0,
    problems,
    rows: obligations.map((o) => ({ obligation: o, checks: o.checks ?? [] })),
  };
}

export const MARKDOWN_BEGIN =
  '<!-- prettier-ignore-start -->\n<!-- audit-manifest:begin: generated from conformance/manifest.yaml by `cfh audit --manifest --markdown`; edit the manifest, not this table -->';
export const MARKDOWN_END = '<!-- audit-manifest:end -->\n<!-- prettier-ignore-end -->';

/** The "Audit checks" table of docs/conformance.md, between its markers. */
export function manifestMarkdown(
  obligations: readonly Obligation[],
  checks: readonly Check[],
): string {
  const titles = new Map(checks.map((c) => [c.id, c.title]));
  const lines = [
    MARKDOWN_BEGIN,
    '',
    '| obligation | status | checked by `cfh audit` | note |',
    '| --- | --- | --- | --- |',
  ];
  for (const o of obligations) {
    const cell = (o.checks ?? []).map((id) => `\`${id}\` (${titles.get(id) ?? '?'})`).join('; ');
    lines.push(
      `| ${o.id} ${o.title} | ${o.status} | ${cell} | ${(o.note ?? '').replaceAll('|', '\\|')} |`,
    );
  }
  lines.push('', MARKDOWN_END);
  return lines.join('\n');
}
