// Which commits the governance extension calls high-risk ("Schema": high-risk commitments
// require a human authority): no policy rule may allow one outright, each carries an
// idempotency key and an approval record, and none is retried automatically.
import { NEVER_REPLAYED, type RiskClass, type SideEffectClass } from '../config/vocabulary.js';
import type { ToolDefinition } from '../tools/contract.js';

const HIGH_RISK_CLASSES: ReadonlySet<RiskClass> = new Set([
  'financial',
  'identity_access',
  'security_sensitive',
  'destructive',
  'privileged_admin',
]);
const HIGH_RISK_EFFECTS: ReadonlySet<SideEffectClass> = new Set([
  'external_commitment',
  'financial_transfer',
  'identity_or_access_change',
  'destructive_change',
]);

export function isHighRisk(tool: Pick<ToolDefinition, 'riskClass' | 'sideEffectClass'>): boolean {
  return HIGH_RISK_CLASSES.has(tool.riskClass) || HIGH_RISK_EFFECTS.has(tool.sideEffectClass);
}

/**
 * Whether a timed-out call may be replayed automatically: never for a class where a replay
 * could act twice outside the run, nor a high-risk commit, whatever retryPolicy says
 * (AH-LIFE-5; host-tools-schema.ts refuses such a profile at load already).
 */
export function replayForbidden(
  tool: Pick<ToolDefinition, 'riskClass' | 'sideEffectClass'>,
): boolean {
  return NEVER_REPLAYED.has(tool.riskClass) || isHighRisk(tool);
}
