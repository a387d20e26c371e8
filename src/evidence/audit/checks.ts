// Every audit check, in the order `cfh audit` prints them: integrity first, then one check
// per applicable clause. conformance/manifest.yaml lists the obligations each covers; a
// unit test reconciles the two. To add a check: write it beside its family, add it here,
// and name it under its obligations in the manifest.
import { oneRouteCheck } from './checks-model.js';
import type { Check } from './check.js';
import { INTEGRITY_CHECKS } from './checks-integrity.js';
import { cleanupCheck, limitsCheck, retriesCheck, terminalCheck } from './checks-lifecycle.js';
import { poolCheck } from './checks-pool.js';
import { callsStoppedCheck } from './checks-stops.js';
import { cfcModeCheck, flowGatedCheck, observationsLabelledCheck } from './checks-cfc.js';
import {
  evidenceBoundaryCheck,
  handlesBeforePolicyCheck,
  promptAuthorityCheck,
} from './checks-cfc-values.js';
import {
  approvalsCheck,
  confinedCheck,
  egressCheck,
  failuresClassifiedCheck,
} from './checks-run.js';
import {
  assuranceCheck,
  hardeningCheck,
  promptSlotsCheck,
  snapshotCheck,
} from './checks-snapshot.js';
import {
  decisionFirstCheck,
  failuresTypedCheck,
  oneResultCheck,
  surfaceCheck,
  transcriptPairedCheck,
} from './checks-tools.js';
import { costProvenanceCheck, usageReportedCheck } from './checks-usage.js';
import { compactionOrderedCheck } from './checks-context.js';
import { sessionTurnsCheck } from './checks-session.js';
import { resumeLinkCheck } from './checks-resume.js';
import { childrenTreeCheck } from './checks-children.js';
import { childrenCfcCheck } from './checks-children-cfc.js';
import { flowDerivedCheck, influenceDerivedCheck } from './checks-cfc-derive.js';
import { policyDerivedCheck } from './checks-policy.js';

export const CHECKS: readonly Check[] = [
  ...INTEGRITY_CHECKS,
  terminalCheck,
  limitsCheck,
  cleanupCheck,
  callsStoppedCheck,
  poolCheck,
  retriesCheck,
  oneRouteCheck,
  compactionOrderedCheck,
  snapshotCheck,
  hardeningCheck,
  assuranceCheck,
  promptSlotsCheck,
  sessionTurnsCheck,
  surfaceCheck,
  oneResultCheck,
  decisionFirstCheck,
  failuresTypedCheck,
  transcriptPairedCheck,
  failuresClassifiedCheck,
  usageReportedCheck,
  costProvenanceCheck,
  confinedCheck,
  egressCheck,
  approvalsCheck,
  policyDerivedCheck,
  cfcModeCheck,
  flowGatedCheck,
  flowDerivedCheck,
  influenceDerivedCheck,
  observationsLabelledCheck,
  handlesBeforePolicyCheck,
  promptAuthorityCheck,
  evidenceBoundaryCheck,
  resumeLinkCheck,
  childrenTreeCheck,
  childrenCfcCheck,
];
