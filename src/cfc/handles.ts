// Opaque value handles (AH-CFC-18/19, AH-REF-1..4): a result whose label the model's
// clearance refuses reaches the model as `cfh-val:<n>`, a name it can pass on but not read.
// A call that uses a handle has it resolved before the call is checked and decided, and the
// value's label joins the call's explicit inputs, so its use is judged like the value
// itself. Minting a handle is not a release, and resolving one grants nothing. The table
// lives in this run's memory only: values never reach the evidence (their digest does), and
// no other run or child sees it.
import { createHash } from 'node:crypto';
import type { Label } from './label.js';

// Digits to the end: `cfh-val:12` is never handle 1 followed by a 2.
const HANDLE = /cfh-val:[0-9]+(?![0-9])/g;

export interface HandleUse {
  readonly handle: string;
  readonly label: Label;
  readonly valueSha256: string;
  readonly chars: number;
}

export type Resolution =
  | { readonly kind: 'resolved'; readonly value: unknown; readonly used: readonly HandleUse[] }
  | { readonly kind: 'unknown'; readonly handles: readonly string[] };

interface Held {
  readonly value: string;
  readonly label: Label;
  readonly valueSha256: string;
}

export class ValueHandles {
  readonly #held = new Map<string, Held>();
  #next = 0;

  get size(): number {
    return this.#held.size;
  }

  /** A new handle for `value` (every mint is a new name: a handle says nothing of equality). */
  mint(value: string, label: Label): HandleUse {
    this.#next += 1;
    const handle = `cfh-val:${this.#next}`;
    const valueSha256 = createHash('sha256').update(value).digest('hex');
    this.#held.set(handle, { value, label, valueSha256 });
    return { handle, label, valueSha256, chars: value.length };
  }

  /**
   * `input` with every handle inside any string replaced by its value, and the handles
   * used; or the handles this run never minted (the call is then invalid).
   */
  resolve(input: unknown): Resolution {
    const used = new Map<string, HandleUse>();
    const unknown = new Set<string>();
    const text = (v: string): string => {
      if (!v.includes('cfh-val:')) return v;
      return v.replace(HANDLE, (m) => {
        const held = this.#held.get(m);
        if (held === undefined) {
          unknown.add(m);
          return m;
        }
        used.set(m, {
          handle: m,
          label: held.label,
          valueSha256: held.valueSha256,
          chars: held.value.length,
        });
        return held.value;
      });
    };
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') return text(v);
      if (Array.isArray(v)) return v.map(walk);
      if (typeof v === 'object' && v !== null) {
        // Keys are the model's too: a handle in a key is resolved like one in a value; two
        // keys that resolve alike would drop a value silently, so that call is invalid.
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          const key = text(k);
          if (Object.hasOwn(out, key)) unknown.add(`${k} (resolves to a key given twice)`);
          out[key] = walk(x);
        }
        return out;
      }
      return v;
    };
    const value = walk(input);
    if (unknown.size > 0) return { kind: 'unknown', handles: [...unknown].sort() };
    return { kind: 'resolved', value, used: [...used.values()] };
  }
}
