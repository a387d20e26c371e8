// Opaque value handles (AH-CFC-18/19, AH-REF-1..4): a result whose label the model's
// clearance refuses reaches the model as `cfh-val:<20 base32>`, a name it can pass on but
// not read. The referent is one call's result (positively identified: AH-REF-1); its name is
// an HMAC of that call under a salt drawn for this run, so names are neither sequential nor
// guessable and a name from another run never resolves here (AH-REF-2). A call that uses a
// handle has it resolved before the call is checked and decided, and the value's label joins
// the call's explicit inputs. Minting is not a release and resolving grants nothing.
//
// The table is sensitive run state (AH-REF-3, AH-CFC-19): it is kept in the run directory
// under the transcript's boundary (engine/handle-store.ts), never in events (they hold no
// digest of a value: a short value would be recovered by trying candidates), and it goes to
// another run only where that run continues this one's model context (resume, restore).
import { createHmac, randomBytes } from 'node:crypto';
import { label, type Label } from './label.js';

const NAME_CHARS = 20;
/** Anything spelled like a handle: a well-formed one this run holds resolves, any other is inert. */
const HANDLE = /cfh-val:[A-Za-z0-9]+/g;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** A held value: what it is, where it came from, and what it carries into a call. */
export interface HeldValue {
  readonly handle: string;
  /** The run and call whose result it is (its referent). */
  readonly runId: string;
  readonly callId: string;
  readonly label: Label;
  /**
   * Whether its integrity counts when a call uses it. False for a mount the operator labelled
   * without integrity (not the workspace): data the model never saw cannot have steered the
   * call, so it carries its confidentiality only (docs/operators.md, "Handles").
   */
  readonly integrityCounts: boolean;
  readonly value: string;
}

export interface HandleUse {
  readonly handle: string;
  readonly label: Label;
  readonly integrityCounts: boolean;
  readonly value: string;
}

export type Resolution =
  | {
      readonly kind: 'resolved';
      readonly value: unknown;
      readonly used: readonly HandleUse[];
      /** Keys the model sent that resolve to a key given twice: a fact of the values. */
      readonly collisions: readonly string[];
    }
  | { readonly kind: 'unknown'; readonly handles: readonly string[] };

function base32(bytes: Buffer, chars: number): string {
  let out = '';
  let bits = 0;
  let acc = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32.charAt((acc >>> (bits - 5)) & 31);
      bits -= 5;
    }
  }
  return out;
}

export class ValueHandles {
  readonly runId: string;
  readonly #salt: Buffer;
  readonly #held = new Map<string, HeldValue>();
  /** Called for every value this table takes, before its handle is handed out. */
  readonly #keep: (held: HeldValue, inherited: boolean) => Promise<void>;

  constructor(runId: string, keep: (held: HeldValue, inherited: boolean) => Promise<void>) {
    this.runId = runId;
    this.#salt = randomBytes(32);
    this.#keep = keep;
  }

  get size(): number {
    return this.#held.size;
  }

  /** The values held, oldest first (what a continuing run inherits). */
  values(): readonly HeldValue[] {
    return [...this.#held.values()];
  }

  /** The handle of this run's call `callId`: the same call always gets the same name. */
  nameOf(callId: string): string {
    const mac = createHmac('sha256', this.#salt).update(`${this.runId}/${callId}`).digest();
    return `cfh-val:${base32(mac, NAME_CHARS)}`;
  }

  /** Holds the result of call `callId` and returns its handle, kept before it is handed out. */
  async mint(
    callId: string,
    value: string,
    label: Label,
    integrityCounts: boolean,
  ): Promise<HeldValue> {
    const handle = this.nameOf(callId);
    const known = this.#held.get(handle);
    if (known !== undefined) return known;
    const held: HeldValue = { handle, runId: this.runId, callId, label, integrityCounts, value };
    await this.#keep(held, false);
    this.#held.set(handle, held);
    return held;
  }

  /** Values of the run this one continues (resume, restore): same names, same referents. */
  async inherit(values: readonly HeldValue[]): Promise<void> {
    for (const v of values) {
      if (this.#held.has(v.handle)) continue;
      await this.#keep(v, true);
      this.#held.set(v.handle, v);
    }
  }

  /**
   * `input` with every handle inside any string replaced by its value, the handles used and
   * the keys that resolve alike; or the handles this table does not hold (the call is then
   * invalid: AH-REF-2).
   */
  resolve(input: unknown): Resolution {
    return resolveHandles(input, (handle) => this.#held.get(handle));
  }
}

/**
 * `input` with every handle inside any string replaced by the value `held` gives it, and the
 * handles used; or the handles `held` does not give (the call is then invalid: AH-REF-2).
 * The one substitution the mediator makes (ValueHandles.resolve) and the audit makes again
 * from the run's held values (evidence/audit/rejections.ts).
 */
export function resolveHandles(
  input: unknown,
  held: (handle: string) => Omit<HandleUse, 'handle'> | undefined,
): Resolution {
  const used = new Map<string, HandleUse>();
  const unknown = new Set<string>();
  const collisions = new Set<string>();
  const text = (v: string): string => {
    if (!v.includes('cfh-val:')) return v;
    return v.replace(HANDLE, (m) => {
      const found = held(m);
      if (found === undefined) {
        unknown.add(m);
        return m;
      }
      used.set(m, {
        handle: m,
        label: found.label,
        integrityCounts: found.integrityCounts,
        value: found.value,
      });
      return found.value;
    });
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      // Keys are the model's too: a handle in a key is resolved like one in a value; two
      // keys that resolve alike would drop a value silently, so that call may not run
      // (whether they collide says something of a value: the caller answers opaquely).
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = text(k);
        if (Object.hasOwn(out, key)) collisions.add(k);
        out[key] = walk(x);
      }
      return out;
    }
    return v;
  };
  const value = walk(input);
  if (unknown.size > 0) return { kind: 'unknown', handles: [...unknown].sort() };
  return {
    kind: 'resolved',
    value,
    used: [...used.values()],
    collisions: [...collisions].sort(),
  };
}

/**
 * The label a used handle carries into a call: its own, or, where its integrity does not
 * count (operator data the model never saw), its confidentiality with the influence's
 * integrity, so joining it lowers nothing (docs/operators.md, "Handles"). The mediator's
 * check and the audit's re-derivation both use this.
 */
export function explicitLabel(
  held: { readonly label: Label; readonly integrityCounts: boolean },
  influence: Label,
): Label {
  if (held.integrityCounts) return held.label;
  return label({
    confidentiality: [...held.label.confidentiality],
    integrity: [...influence.integrity],
  });
}

/** Whether `text` names anything spelled like a handle (a call that may carry one). */
export function mentionsHandle(text: string): boolean {
  return text.includes('cfh-val:');
}
