// The expected-failures ledger (conformance/expected-failures.yaml): known deviations, each
// a check that fails on runs of some kinds, with the reason and what retires it. An audit
// with the ledger fails on a failure it does not list and on a listed failure that no
// longer occurs, so the ledger can neither hide a new problem nor outlive a fixed one.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
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
  const parsed = Ledger.safeParse(parse(text));
  if (!parsed.success)
    throw new ConfigError(
      'ledger_invalid',
      `expected-failures ledger ${file}: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
      { field: '--expected', value: file },
    );
  return parsed.data.entries;
}
