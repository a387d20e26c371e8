// docs/conformance.md's generated parts, rendered from the conformance manifest: one clause
// table per section (clause, status, mechanism, proved by), the "Audit checks" table and
// the list of what is not advertised. Each stands between two marker comments; the prose
// around them is written by hand, and no table row outside them may name an obligation
// (handWrittenClauseRows), so the manifest stays the one source of every claim.
// `cfh audit --manifest --markdown` prints the blocks; scripts/conformance-doc.mjs writes
// them into the document; test/unit/conformance-manifest.test.ts fails when it differs.
import type { Check } from './check.js';
import type { Manifest, Obligation, Proof } from './manifest.js';

export const AUDIT_BLOCK = 'audit-checks';
export const NOT_ADVERTISED_BLOCK = 'not-advertised';

export function blockBegin(id: string): string {
  return `<!-- prettier-ignore-start -->\n<!-- manifest:${id}:begin: generated from conformance/manifest.yaml by \`npm run conformance-doc\`; edit the manifest, not this block -->`;
}
export function blockEnd(id: string): string {
  return `<!-- manifest:${id}:end -->\n<!-- prettier-ignore-end -->`;
}

export interface Block {
  readonly id: string;
  /** The block with its markers, as the document holds it. */
  readonly text: string;
}

/** Every generated block, in the order of the document. */
export function manifestBlocks(manifest: Manifest, checks: readonly Check[]): Block[] {
  const bodies: [string, string[]][] = manifest.sections.map((s) => [
    s.id,
    sectionTable(manifest, s.id),
  ]);
  bodies.push([AUDIT_BLOCK, auditTable(manifest.obligations, checks)]);
  bodies.push([NOT_ADVERTISED_BLOCK, notAdvertised(manifest.obligations)]);
  return bodies.map(([id, lines]) => ({
    id,
    text: [blockBegin(id), '', ...lines, '', blockEnd(id)].join('\n'),
  }));
}

const cell = (text: string): string => text.replaceAll('\n', ' ').replaceAll('|', '\\|');

function sectionTable(manifest: Manifest, section: string): string[] {
  const status = new Map(manifest.obligations.map((o) => [o.id, o.status]));
  const lines = ['| clause | status | mechanism | proved by |', '| --- | --- | --- | --- |'];
  for (const o of manifest.obligations)
    for (const c of o.claims ?? [])
      if (c.section === section) {
        const ids = [o.id, ...(c.also ?? [])];
        const statuses = [...new Set(ids.map((id) => status.get(id)))];
        const said =
          statuses.length === 1
            ? String(statuses[0])
            : ids.map((id) => `${id} ${String(status.get(id))}`).join(', ');
        const deviations = (c.deviations ?? []).map((d) => `_${d}_`).join(', ');
        lines.push(
          `| ${cell(`${clauseIds(ids)} ${c.aspect ?? o.title}`)} | ${cell(deviations === '' ? said : `${said}; deviation: ${deviations}`)} | ${cell(c.mechanism)} | ${cell(c.provedBy.map(proofText).join('; '))} |`,
        );
      }
  return lines;
}

/** `AH-TOOL-1/2` for one family, `AH-CONT-1/AH-TOOL-5` across families. */
function clauseIds(ids: readonly string[]): string {
  const family = (id: string): string => id.replace(/-\d+[a-z]?$/, '');
  const first = ids[0] ?? '';
  return [
    first,
    ...ids
      .slice(1)
      .map((id) => (family(id) === family(first) ? id.slice(family(id).length + 1) : id)),
  ].join('/');
}

function proofText(p: Proof): string {
  const file = 'test' in p ? p.test : p.doc;
  const names = (p.names ?? []).map((n) => `"${n}"`).join(', ');
  return [file, names, p.detail === undefined ? '' : `(${p.detail})`]
    .filter((s) => s !== '')
    .join(' ');
}

function auditTable(obligations: readonly Obligation[], checks: readonly Check[]): string[] {
  const titles = new Map(checks.map((c) => [c.id, c.title]));
  const lines = [
    '| obligation | status | checked by `cfh audit` | note |',
    '| --- | --- | --- | --- |',
  ];
  for (const o of obligations) {
    if (o.status === 'not-advertised') continue;
    const checked = (o.checks ?? []).map((id) => `\`${id}\` (${titles.get(id) ?? '?'})`);
    lines.push(
      `| ${cell(`${o.id} ${o.title}`)} | ${o.status} | ${cell(checked.join('; '))} | ${cell(o.note ?? '')} |`,
    );
  }
  return lines;
}

function notAdvertised(obligations: readonly Obligation[]): string[] {
  return obligations
    .filter((o) => o.status === 'not-advertised')
    .map((o) => `- **${o.id}** ${o.title}${o.note === undefined ? '' : `: ${o.note}`}`);
}

export interface Regenerated {
  readonly text: string;
  readonly problems: readonly string[];
}

/** The document with every generated block replaced by what the manifest renders now. */
export function regenerate(doc: string, blocks: readonly Block[]): Regenerated {
  const problems: string[] = [];
  let text = doc;
  for (const b of blocks) {
    const start = text.indexOf(blockBegin(b.id));
    const endMarker = blockEnd(b.id);
    const end = text.indexOf(endMarker, start);
    if (start < 0 || end < 0) {
      problems.push(`no block ${b.id} (its markers are missing)`);
      continue;
    }
    text = text.slice(0, start) + b.text + text.slice(end + endMarker.length);
  }
  const known = new Set(blocks.map((b) => b.id));
  for (const m of text.matchAll(/<!-- manifest:([a-z-]+):begin/g))
    if (m[1] !== undefined && !known.has(m[1]))
      problems.push(`a block ${m[1]} the manifest has not`);
  return { text, problems };
}

/** Table rows outside the generated blocks whose first cell names an obligation. */
export function handWrittenClauseRows(doc: string): string[] {
  const rows: string[] = [];
  let inside = false;
  for (const line of doc.split('\n')) {
    if (/^<!-- manifest:[a-z-]+:begin/.test(line)) inside = true;
    else if (/^<!-- manifest:[a-z-]+:end/.test(line)) inside = false;
    else if (!inside && /^\|\s*(AH|AHGE|CFH)-[A-Z]+-\d/.test(line)) rows.push(line.slice(0, 80));
  }
  return rows;
}
