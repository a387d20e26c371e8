// The CFC vocabulary of a profile (CFC integration profile, AH-CFC-1..19): labels an operator
// assigns to sources (the workspace, mounts, network destinations, host-tool results), what
// sinks require and may receive, and the run's enforcement mode. Labels are assigned only
// from here and from where a value came from; nothing a sandbox, tool or model says is ever
// parsed into one (AH-CFC-1/2).
import { z } from 'zod';

/** An atom: an operator's name for a kind of secrecy (`secret`) or of trust (`user`). */
export const Atom = z
  .string()
  .regex(
    /^[a-z][a-z0-9_.-]{0,62}(:[a-z0-9][a-z0-9_.-]{0,62})?$/,
    'lower-case letters, digits, _ . -, with at most one `kind:` prefix (repo:untrusted)',
  );
export type Atom = z.infer<typeof Atom>;

/** cfh's own atoms (AH-CFC-3/8): minted by cfh only, so no operator label may carry them. */
export const PROMPT_DIRECT = 'prompt:direct';
export const CFH_ATOM = 'cfh';
/** The default integrity of data that came in from the network. */
export const NETWORK_ATOM = 'network';
/** The confidentiality of a value whose source has no label (enforce-explicit: opaque). */
export const UNLABELLED_ATOM = 'unlabelled';
export const RESERVED_ATOMS: ReadonlySet<string> = new Set([
  PROMPT_DIRECT,
  CFH_ATOM,
  UNLABELLED_ATOM,
]);

const atoms = z.array(Atom).max(64);

/** A label as a requirement or clearance may name it: any atom, cfh's own included. */
export const AtomList = atoms;

/**
 * A label an operator assigns to a source. `prompt:direct`, `cfh` and `unlabelled` are
 * cfh's alone: a mount labelled `prompt:direct` would forge the caller's authority.
 */
export const LabelSpec = z
  .strictObject({
    confidentiality: atoms.default([]),
    integrity: atoms.default([]),
  })
  .superRefine((l, ctx) => {
    for (const side of ['confidentiality', 'integrity'] as const)
      for (const [i, a] of l[side].entries())
        if (RESERVED_ATOMS.has(a))
          ctx.addIssue({
            code: 'custom',
            path: [side, i],
            message: `'${a}' is cfh's own atom: only cfh assigns it (AH-CFC-3)`,
          });
  });
export type LabelSpec = z.infer<typeof LabelSpec>;

/** The modes of the profile's section 6; `observe` is diagnostic, never enforcement. */
export const CfcMode = z.enum(['disabled', 'observe', 'enforce-explicit', 'enforce-strict']);
export type CfcMode = z.infer<typeof CfcMode>;

export function isEnforcing(mode: CfcMode): boolean {
  return mode === 'enforce-explicit' || mode === 'enforce-strict';
}

/** The modes from weakest to strongest: a child's is at least its parent's (AH-CFC-12). */
const CFC_STRENGTH: readonly CfcMode[] = [
  'disabled',
  'observe',
  'enforce-explicit',
  'enforce-strict',
];

/** A mode's place from weakest (0) to strongest: what a resume or a session may not lower. */
export function cfcStrength(mode: CfcMode): number {
  return CFC_STRENGTH.indexOf(mode);
}

/** The stronger of two modes (the child planner's, checked again by the audit). */
export function strongerCfcMode(a: CfcMode, b: CfcMode): CfcMode {
  return CFC_STRENGTH.indexOf(a) >= CFC_STRENGTH.indexOf(b) ? a : b;
}

/**
 * What a sink asks of a call (AH-CFC-9): `requires.integrity`, atoms every influence on the
 * call must have; `clearance`, the confidentiality atoms its inputs may carry (default none).
 */
export const SinkRequirement = z.strictObject({
  requires: z.strictObject({ integrity: atoms.default([]) }).optional(),
  clearance: atoms.optional(),
});
export type SinkRequirement = z.infer<typeof SinkRequirement>;

/** An environment variable's name, as `env:` and `--env` take it (POSIX portable). */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a valid environment name');

export const CfcSection = z.strictObject({
  mode: CfcMode.default('disabled'),
  /** Confidentiality atoms that may enter the model context (the provider is a sink). */
  modelClearance: atoms.default([]),
  /** Per built-in tool (`exec`, `write_file`, ...): its requirement, over the defaults. */
  sinks: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), SinkRequirement).default({}),
  /**
   * The label of an environment value of exec's container, by name (cfc/env-labels.ts):
   * every `--env`/`--env-file` value is a source, and a profile `env:` value named here.
   */
  envLabels: z.record(EnvName, LabelSpec).default({}),
});
export type CfcSection = z.infer<typeof CfcSection>;

/**
 * `--label TARGET=ATOM,...`: a bare or `c:` atom is confidentiality, `i:ATOM` integrity.
 * TARGET is a mount target (`/secrets`) or an environment value (`env:NAME`).
 */
export function parseLabelFlag(value: string): { target: string; label: LabelSpec } | string {
  const eq = value.indexOf('=');
  if (eq <= 0) return `'${value}' is not TARGET=ATOM,... (for instance /secrets=secret)`;
  const target = value.slice(0, eq);
  const confidentiality: string[] = [];
  const integrity: string[] = [];
  for (const raw of value.slice(eq + 1).split(',')) {
    const item = raw.trim();
    if (item === '') continue;
    if (item.startsWith('i:')) integrity.push(item.slice(2));
    else confidentiality.push(item.startsWith('c:') ? item.slice(2) : item);
  }
  const parsed = LabelSpec.safeParse({ confidentiality, integrity });
  if (!parsed.success) return `${target}: ${parsed.error.issues.map((i) => i.message).join('; ')}`;
  return { target, label: parsed.data };
}
