// The expected-failures ledger (conformance/expected-failures.yaml): known deviations, each
// a check that fails on runs of some kinds, with the reason and what retires it. An audit
// with the ledger fails on a failure it does not list and on a listed failure that no
// longer occurs, so the ledger can neither hide a new problem nor outlive a fixed one.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import { parseYamlText, YamlSyntaxError, type ParsedYaml } from '../../config/yaml-file.js';
import { describeIssues } from '../../config/zod-issues.js';
import { PACKAGE_ROOT } from '../../paths.js';

export const LedgerEntry = z.strictObject({
  check: z.string().min(1),
  kinds: z.array(z.enum(['command', 'agent', 'network'])).min(1),
  reason: z.string().min(1),
  retire: z.string().min(1),
});
export type LedgerEntry = z.infer<typeof LedgerEntry>;

export const Ledger = z.strictObject({
  schema: z.literal('cfh.expected-failures/1'),
  entries: z.array(LedgerEntry),
});

export const LEDGER_FILE = path.join(PACKAGE_ROOT, 'conformance', 'expected-failures.yaml');

export function loadLedger(file = LEDGER_FILE): LedgerEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new ConfigError('ledger_unreadable', `expected-failures ledger: cannot read ${file}`, {
      field: '--expected',
      value: file,
    });
  }
  // The yaml library's own messages span lines and quote the text: where, never what
  // (yaml-file.ts, zod-issues.ts).
  let yaml: ParsedYaml;
  try {
    yaml = parseYamlText(text);
  } catch (error) {
    if (!(error instanceof YamlSyntaxError)) throw error;
    throw new ConfigError(
      'ledger_invalid',
      `expected-failures ledger ${error.in(file)}`,
      { field: '--expected', value: file },
      'fix the YAML syntax there',
    );
  }
  const parsed = Ledger.safeParse(yaml.value);
  if (!parsed.success)
    throw new ConfigError(
      'ledger_invalid',
      `expected-failures ledger ${file}: ${describeIssues(parsed.error, { schema: Ledger, locate: yaml.locate })}`,
      { field: '--expected', value: file },
    );
  return parsed.data.entries;
}
