// The flow decision of one model-authored call (AH-CFC-9/10/11): the call's label is the
// influence it carries (the model context's label when it was proposed, AH-CFC-7) joined
// with what it explicitly uses (resolved handles, AH-CFC-18) and what the tool reads before
// it writes (AH-CFC-10). Every sink the call can reach must be cleared for the label's
// confidentiality, and the label must carry every integrity atom a sink requires. The
// mediator asks this before policy (mediator.ts); the model is never asked (AH-CFC-1).
import { isEnforcing } from '../config/cfc-schema.js';
import type { RiskClass } from '../config/vocabulary.js';
import { describeLabel, join, missingIntegrity, uncleared, type Label } from './label.js';
import { mountOf, workloadReadable, workloadSinks, type CfcPlan } from './label-map.js';
import type { HostToolLabels } from './host-tool-labels.js';
import { defaultRequiredIntegrity } from './sink-defaults.js';

/** What the flow decision needs of a tool (a ToolDefinition has it all). */
export interface FlowTool {
  readonly name: string;
  readonly riskClass: RiskClass;
  readonly executor: 'sandbox' | 'host';
  /** A host tool's labels (host tools only). */
  readonly cfc?: HostToolLabels | undefined;
}

/** One place a call's data can go, and what it accepts. */
export interface Sink {
  readonly sink: string;
  readonly clearance: readonly string[];
  readonly requires: readonly string[];
}

export type FlowRule = 'cfc:clearance' | 'cfc:integrity' | 'cfc:unlabelled';

export interface FlowVerdict {
  /** `allow`: it may flow; `deny`/`would_deny`: a violation, enforced or only observed. */
  readonly verdict: 'allow' | 'deny' | 'would_deny';
  readonly rule: FlowRule | 'cfc:allow';
  readonly reason: string;
  /** The label of the context the call was proposed in (derived influence, AH-CFC-8). */
  readonly influence: Label;
  /** What the call uses explicitly: resolved handles, reads before writes. */
  readonly explicit: Label | null;
  /** influence joined with explicit: what the sinks were judged against. */
  readonly label: Label;
  readonly sinks: readonly Sink[];
  /** The sinks that refused, and what each lacked. */
  readonly violations: readonly {
    readonly sink: string;
    readonly uncleared: readonly string[];
    readonly missing: readonly string[];
  }[];
}

export interface FlowInput {
  readonly plan: CfcPlan;
  readonly workspaceTarget: string;
  readonly tool: FlowTool;
  readonly args: unknown;
  readonly influence: Label;
  /** Labels of what the call uses explicitly (resolved handles), if any. */
  readonly explicit?: readonly Label[];
  /** exec in a per-run container: the join of every label that entered it so far. */
  readonly container?: Label | undefined;
}

const WRITES_PATH = new Set(['write_file', 'edit_file']);

/** A clearance of any confidentiality (not an atom: no operator can spell it). */
export const ANY_CONFIDENTIALITY = '*';

/** The sinks a call can reach, and what its tool reads before it writes (AH-CFC-10). */
export function sinksOf(input: FlowInput): { sinks: Sink[]; reads: Label[]; unlabelled: string[] } {
  const { plan, tool } = input;
  const own = plan.sinks[tool.name];
  const required = [
    ...defaultRequiredIntegrity(plan.mode, tool.riskClass),
    ...(own?.requires?.integrity ?? []),
  ];
  // The tool itself bounds confidentiality only where the profile says so (`*`: any); the
  // places it writes or sends to carry their own clearance below.
  const base: Sink = {
    sink: `tool ${tool.name}`,
    clearance: own?.clearance ?? [ANY_CONFIDENTIALITY],
    requires: required,
  };
  if (tool.executor === 'host') {
    const c = tool.cfc;
    const sink: Sink = {
      sink: `host tool ${tool.name}`,
      clearance: c?.clearance ?? [],
      requires: [...required, ...(c?.requires ?? [])],
    };
    const reads = c?.readsBeforeWrite === true && c.result !== undefined ? [c.result] : [];
    const unlabelled = c?.readsBeforeWrite === true && c.result === undefined ? [sink.sink] : [];
    return { sinks: [sink], reads, unlabelled };
  }
  if (tool.name === 'exec') {
    // exec reads every mount of its container and can send or write what it read anywhere
    // its container reaches: all of it is in the write decision.
    const reach = workloadSinks(plan).map((s) => ({
      ...s,
      requires: [...s.requires, ...required],
      clearance: s.clearance,
    }));
    // Its mounts and, when the posture lets data in, the network: what came in joins too.
    const { labels, unlabelled } = workloadReadable(plan);
    const reads: Label[] = [...labels];
    if (input.container !== undefined) reads.push(input.container);
    // Nothing to reach but the model: the tool's own requirement still holds.
    return { sinks: reach.length === 0 ? [base] : [...reach, base], reads, unlabelled };
  }
  if (WRITES_PATH.has(tool.name)) {
    const p = pathArg(input.args);
    const m = p === undefined ? undefined : mountOf(plan, p, input.workspaceTarget);
    // Outside every mount: the file-tool container's own files, which a later read would
    // show as the image's; nothing confidential goes there.
    if (m === undefined)
      return {
        sinks: [
          { ...base, sink: `${tool.name} outside every mount`, clearance: own?.clearance ?? [] },
        ],
        reads: [],
        unlabelled: [],
      };
    // A tool's own clearance narrows a mount's, never widens it.
    const sink: Sink = {
      sink: `mount ${m.target}`,
      clearance:
        own?.clearance === undefined
          ? m.clearance
          : m.clearance.filter((a) => own.clearance?.includes(a) === true),
      requires: required,
    };
    // edit_file reads the file it rewrites.
    const reads = tool.name === 'edit_file' && m.label !== undefined ? [m.label] : [];
    const unlabelled = tool.name === 'edit_file' && m.label === undefined ? [sink.sink] : [];
    return { sinks: [sink], reads, unlabelled };
  }
  return {
    sinks: required.length === 0 && own === undefined ? [] : [base],
    reads: [],
    unlabelled: [],
  };
}

function pathArg(args: unknown): string | undefined {
  if (typeof args !== 'object' || args === null) return undefined;
  const p = (args as { path?: unknown }).path;
  return typeof p === 'string' ? p : undefined;
}

/**
 * The exact `--label` entry of each unlabelled source that has one (a mount, an env value):
 * a refusal names what would lift it.
 */
function labelEntries(unlabelled: readonly string[]): string {
  const entries = unlabelled.flatMap((u) => {
    if (u.startsWith('env '))
      return [`--label env:${u.slice(4)}=ATOM,... (or cfc.envLabels.${u.slice(4)})`];
    if (u.startsWith('mount ')) return [`--label ${u.slice(6)}=ATOM,...`];
    return [];
  });
  return entries.length === 0 ? '' : `: ${entries.join(', ')}`;
}

/** The flow decision; under `disabled` every call flows and nothing is judged. */
export function judgeFlow(input: FlowInput): FlowVerdict {
  const { plan } = input;
  const { sinks, reads, unlabelled } = sinksOf(input);
  const explicitParts = [...(input.explicit ?? []), ...reads];
  const explicit = explicitParts.length === 0 ? null : explicitParts.reduce(join);
  const callLabel = explicit === null ? input.influence : join(input.influence, explicit);
  const violations = sinks
    .map((s) => ({
      sink: s.sink,
      uncleared: s.clearance.includes(ANY_CONFIDENTIALITY) ? [] : uncleared(callLabel, s.clearance),
      missing: missingIntegrity(callLabel, s.requires),
    }))
    .filter((v) => v.uncleared.length > 0 || v.missing.length > 0);
  const base = { influence: input.influence, explicit, label: callLabel, sinks };
  const enforced = isEnforcing(plan.mode);
  const refuse = enforced ? 'deny' : 'would_deny';
  if (plan.mode !== 'disabled' && unlabelled.length > 0)
    return {
      ...base,
      verdict: refuse,
      rule: 'cfc:unlabelled',
      reason: `cfc: ${input.tool.name} reads ${unlabelled.join(', ')}, which has no label; give it one in the profile or with --label${labelEntries(unlabelled)}`,
      violations: unlabelled.map((sink) => ({ sink, uncleared: [], missing: [] })),
    };
  if (plan.mode === 'disabled' || violations.length === 0)
    return {
      ...base,
      verdict: 'allow',
      rule: 'cfc:allow',
      reason: 'the flow is allowed',
      violations: [],
    };
  const first = violations[0] as (typeof violations)[number];
  const rule: FlowRule = first.uncleared.length > 0 ? 'cfc:clearance' : 'cfc:integrity';
  const why =
    first.uncleared.length > 0
      ? `${first.sink} is not cleared for [${first.uncleared.join(', ')}]`
      : `${first.sink} requires integrity [${first.missing.join(', ')}], which the call's influence lacks`;
  return {
    ...base,
    verdict: refuse,
    rule,
    reason: `cfc: ${input.tool.name} refused: ${why} (the call carries ${describeLabel(callLabel)})`,
    violations,
  };
}
