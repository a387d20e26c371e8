// The label algebra (CFC integration profile, AH-CFC-7/8): a label is a set of
// confidentiality atoms (how secret) and a set of integrity atoms (whose word it is).
// Joining two labels unions confidentiality and intersects integrity: the result is at
// least as secret and at most as trusted as either part. Labels are values: sorted, unique
// and frozen, so two equal labels have the same canonical JSON (and the same digest).
import type { LabelSpec } from '../config/cfc-schema.js';

export interface Label {
  readonly confidentiality: readonly string[];
  readonly integrity: readonly string[];
}

function set(atoms: Iterable<string>): readonly string[] {
  return Object.freeze([...new Set(atoms)].sort());
}

export function label(spec: Partial<LabelSpec> = {}): Label {
  return Object.freeze({
    confidentiality: set(spec.confidentiality ?? []),
    integrity: set(spec.integrity ?? []),
  });
}

/** The join of two labels: more secret, less trusted. */
export function join(a: Label, b: Label): Label {
  const trusted = new Set(b.integrity);
  return Object.freeze({
    confidentiality: set([...a.confidentiality, ...b.confidentiality]),
    integrity: set(a.integrity.filter((x) => trusted.has(x))),
  });
}

/**
 * The join of `first` and every label of `rest`. There is no neutral label for integrity
 * (it would be "every atom"), so a join always starts from a real one: the influence of a
 * call, the prompt slot of a context.
 */
export function joinAll(first: Label, rest: Iterable<Label>): Label {
  let out = first;
  for (const l of rest) out = join(out, l);
  return out;
}

/** The confidentiality atoms of `l` that `clearance` does not cover (empty: it may flow). */
export function uncleared(l: Label, clearance: readonly string[]): string[] {
  const ok = new Set(clearance);
  return l.confidentiality.filter((a) => !ok.has(a));
}

/** The required integrity atoms `l` lacks (empty: the requirement holds). */
export function missingIntegrity(l: Label, required: readonly string[]): string[] {
  const has = new Set(l.integrity);
  return [...new Set(required)].filter((a) => !has.has(a)).sort();
}

export function sameLabel(a: Label, b: Label): boolean {
  return (
    a.confidentiality.join('\0') === b.confidentiality.join('\0') &&
    a.integrity.join('\0') === b.integrity.join('\0')
  );
}

/** `{c: secret; i: repo:untrusted}`: how a label reads in a message. */
export function describeLabel(l: Label): string {
  const c = l.confidentiality.length === 0 ? '-' : l.confidentiality.join(',');
  const i = l.integrity.length === 0 ? '-' : l.integrity.join(',');
  return `{confidentiality: ${c}; integrity: ${i}}`;
}
