// The CFC sink defaults as docs/operators.md publishes them ("CFC (information flow
// control)") are the ones cfh evaluates (src/cfc/sink-defaults.ts, AH-CFC-9): the table
// between the markers is generated from describeSinkDefaults() and compared byte for byte.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSinkDefaults } from '../../src/cfc/sink-defaults.js';

const BEGIN = '<!-- cfc-sink-defaults:begin -->';
const END = '<!-- cfc-sink-defaults:end -->';

function atoms(list: readonly string[]): string {
  return list.length === 0 ? 'none' : list.map((a) => `\`${a}\``).join(', ');
}

/** The published table: one row per risk class, in the vocabulary's order. */
function sinkDefaultsMarkdown(): string {
  const rows = describeSinkDefaults().map(
    (r) => `| \`${r.riskClass}\` | ${atoms(r.strict)} | ${atoms(r.explicit)} |`,
  );
  return [
    '| risk class | `enforce-strict` requires integrity | `enforce-explicit` requires integrity |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n');
}

describe('cfc docs', () => {
  it('docs/operators.md publishes the sink defaults cfh evaluates', () => {
    const doc = readFileSync(path.join('docs', 'operators.md'), 'utf8');
    const start = doc.indexOf(BEGIN);
    const end = doc.indexOf(END);
    expect(start, 'cfc-sink-defaults markers missing in docs/operators.md').toBeGreaterThan(0);
    expect(doc.slice(start + BEGIN.length, end).trim()).toBe(sinkDefaultsMarkdown());
  });

  it('the strict table names prompt:direct for the consequential classes only', () => {
    const md = sinkDefaultsMarkdown();
    expect(md).toContain('| `write_external` | `prompt:direct` | none |');
    expect(md).toContain('| `read_only` | none | none |');
    expect(md).toContain('| `process_execution` | none | none |');
  });
});
