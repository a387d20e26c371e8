// The default sink requirements by risk class (AH-CFC-9), like the mediator's risk-class
// defaults (mediator/defaults.ts) and published beside them in docs/operators.md ("CFC").
// Under enforce-strict a consequential action runs only from the bound direct command: its
// influence must carry `prompt:direct`, which nothing but the caller's captured prompt mints
// (AH-CFC-3/4), and which reading anything else takes away. Under enforce-explicit only what
// a profile declares is required; observe records what strict would refuse. Clearance defaults to none in every enforcing mode: a
// confidential value flows only where an operator said it may.
import { PROMPT_DIRECT, type CfcMode } from '../config/cfc-schema.js';
import { RiskClass } from '../config/vocabulary.js';

const STRICT_DIRECT: ReadonlySet<RiskClass> = new Set<RiskClass>([
  'write_internal',
  'write_external',
  'communication',
  'financial',
  'identity_access',
  'security_sensitive',
  'destructive',
  'privileged_admin',
]);

/** The integrity atoms a sink of `riskClass` requires by default in `mode`. */
export function defaultRequiredIntegrity(mode: CfcMode, riskClass: RiskClass): readonly string[] {
  // observe records what strict would refuse: the most demanding reading, so a diagnostic
  // run shows every would-be denial.
  const strict = mode === 'enforce-strict' || mode === 'observe';
  return strict && STRICT_DIRECT.has(riskClass) ? [PROMPT_DIRECT] : [];
}

/** The table as published: per risk class, what each enforcing mode requires by default. */
export function describeSinkDefaults(): {
  riskClass: RiskClass;
  strict: readonly string[];
  explicit: readonly string[];
}[] {
  return RiskClass.options.map((riskClass) => ({
    riskClass,
    strict: defaultRequiredIntegrity('enforce-strict', riskClass),
    explicit: defaultRequiredIntegrity('enforce-explicit', riskClass),
  }));
}
