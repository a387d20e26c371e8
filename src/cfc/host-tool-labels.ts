// The CFC labels of a host tool (CFC integration profile, AH-CFC-2/10/16): what its result
// carries, what its arguments may carry, what its callers' influence must have; and a sink
// is a source of what it may receive (heldBack), for a host tool's entry as for a
// destination. Pure: the mediator's flow gate, the tools and the audit read the same.
import type { HostToolEntry } from '../config/host-tools-schema.js';
import { label, type Label } from './label.js';

export interface HostToolLabels {
  readonly result: Label | undefined;
  readonly clearance: readonly string[];
  readonly requires: readonly string[];
  readonly readsBeforeWrite: boolean;
  /**
   * The operator's word that its result says nothing of its inputs (a declassifier): the
   * result carries its own label alone, not joined with theirs; recorded at each call.
   */
  readonly declassifies: boolean;
}

/** Whether some tool of the entry answers without a result label (`unlabelled`). */
export function hostToolResultUnlabelled(t: HostToolEntry): boolean {
  if (t.resultLabel !== undefined) return false;
  if (t.kind === 'exec') return true;
  return t.tools.some((e) => e.resultLabel === undefined);
}

/**
 * A sink is a source of what it was cleared to receive (AH-CFC-2/10): a destination, an MCP
 * server or an exec host tool keeps what was sent to it (a store, a graph, a log) and can
 * hand it back to any later call, of this run or another one. What an enforcing run lets
 * into a sink is bounded by its clearance, so data from it carries that clearance's
 * confidentiality, as a mount's reads carry its own (planCfc). Bounding by the clearance
 * rather than by what this run sent covers a value an earlier run left there.
 */
export function heldBack(own: Label, clearance: readonly string[]): Label {
  if (clearance.length === 0) return own;
  return label({
    confidentiality: [...own.confidentiality, ...clearance],
    integrity: [...own.integrity],
  });
}

/**
 * Every confidentiality atom some tool of a host tool entry may receive: the entry is one
 * process (an exec command, an MCP server) whose state any of its tools can read back.
 */
export function entryClearance(entry: HostToolEntry): string[] {
  const own = entry.kind === 'mcp' ? entry.tools.flatMap((t) => t.clearance ?? []) : [];
  return [...new Set([...(entry.clearance ?? []), ...own])];
}

/**
 * The CFC labels of a host tool (an `mcp` tool's own entry over its server's). Its result
 * carries its `resultLabel` joined with what its entry may have received (heldBack); a
 * declassifier's, the operator's word that its answer says nothing of what it received,
 * its `resultLabel` alone.
 */
export function hostToolLabels(entry: HostToolEntry, toolName?: string): HostToolLabels {
  const own =
    entry.kind === 'mcp'
      ? entry.tools.find((t) => t.name === toolName && t.name !== '*')
      : undefined;
  const result = own?.resultLabel ?? entry.resultLabel;
  const declassifies = own?.declassifies ?? entry.declassifies ?? false;
  return {
    result:
      result === undefined
        ? undefined
        : declassifies
          ? label(result)
          : heldBack(label(result), entryClearance(entry)),
    clearance: [...new Set(own?.clearance ?? entry.clearance ?? [])].sort(),
    requires: [...new Set(own?.requires?.integrity ?? entry.requires?.integrity ?? [])].sort(),
    readsBeforeWrite: own?.readsBeforeWrite ?? entry.readsBeforeWrite ?? false,
    declassifies,
  };
}
