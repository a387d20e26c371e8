// The one verifier of a run directory's evidence (AH-ART-1, AH-LIFE-2, CFH-EVID-1/2): the
// integrity checks of the audit (audit/checks-integrity.ts: the hash chain from the first
// event, the terminal anchor and the report digest, every recorded file against its digest
// and recorded size, files no record accounts for, the operator's signature, the shape of
// every document), run over the evidence as the bounded reader read it (run-reader.ts).
// `runs show` prints its result; `cfh audit` runs the same checks and its clause checks after
// them; every command that acts on a run (runs diff/apply, --from-plan) refuses a run it does
// not pass, with the strictness of `cfh audit`: a fail refuses, and with a trusted key
// configured a missing or foreign signature is a fail.
import type { TrustedKey } from './signing.js';
import { auditEvidence } from './audit/audit.js';
import { INTEGRITY_CHECKS } from './audit/checks-integrity.js';
import type { CheckResult } from './audit/check.js';
import type { RunEvidence } from './audit/run-evidence.js';

export interface RunVerification {
  readonly ok: boolean;
  /** What was checked and held, in words an operator reads. */
  readonly verified: readonly string[];
  /** What was checked and failed, with the place. */
  readonly problems: readonly string[];
  /** What the evidence cannot prove by itself, or could not be checked. */
  readonly notVerified: readonly string[];
  /** The checks as `cfh audit` reports them. */
  readonly checks: readonly CheckResult[];
}

export function verifyEvidence(
  run: RunEvidence,
  trustedKey: TrustedKey | undefined,
): RunVerification {
  const { checks } = auditEvidence(run, { trustedKey, checks: INTEGRITY_CHECKS });
  const verified: string[] = [];
  const problems: string[] = [];
  const notVerified: string[] = [];
  for (const c of checks) {
    if (c.verdict === 'pass') verified.push(`${c.id}: ${c.detail}`);
    else if (c.verdict === 'fail') {
      // The places, as the check names them; the check's own line when it names none, or
      // when it listed only the first of them.
      if (c.where.length === 0 || /\(\+\d+ more\)$/.test(c.detail))
        problems.push(`${c.id}: ${c.detail}`);
      problems.push(...c.where);
    } else notVerified.push(`${c.id}: ${c.detail}`);
  }
  return { ok: problems.length === 0, verified, problems, notVerified, checks };
}
