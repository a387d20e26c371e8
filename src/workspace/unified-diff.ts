// Line diff of two texts as unified-diff hunks (the `@@ -a,b +c,d @@` body of a patch), by
// Myers' O((N+M)D) algorithm after trimming the common head and tail. Past MAX_EDITS
// differing lines the search stops and the hunk replaces the whole differing middle:
// still a correct diff, only a longer one, and the time and memory stay bounded.

export const MAX_EDITS = 2000;
const NO_NEWLINE = '\\ No newline at end of file';

type Op = { readonly tag: ' ' | '-' | '+'; readonly line: Line };

interface Line {
  readonly text: string;
  /** The last line of its text, with no newline after it. */
  readonly open: boolean;
}

function linesOf(text: string): Line[] {
  if (text === '') return [];
  const parts = text.split('\n');
  const open = parts.at(-1) !== '';
  if (!open) parts.pop();
  return parts.map((t, i) => ({ text: t, open: open && i === parts.length - 1 }));
}

const keyOf = (l: Line): string => (l.open ? `${l.text}\u0000` : l.text);

/** The hunks turning `oldText` into `newText`, each line without its newline. */
export function unifiedHunks(oldText: string, newText: string, context = 3): string[] {
  const a = linesOf(oldText);
  const b = linesOf(newText);
  const ops = editScript(a, b);
  return formatHunks(ops, context);
}

/**
 * The lines `a` and `b` keep in common along one edit script, as index pairs, both
 * increasing (the 3-way merge's alignment, merge3.ts). Each string is compared whole.
 */
export function matchedLines(
  a: readonly string[],
  b: readonly string[],
): (readonly [number, number])[] {
  const asLines = (xs: readonly string[]): Line[] => xs.map((text) => ({ text, open: false }));
  const pairs: (readonly [number, number])[] = [];
  let i = 0;
  let j = 0;
  for (const o of editScript(asLines(a), asLines(b))) {
    if (o.tag === ' ') pairs.push([i, j]);
    if (o.tag !== '+') i += 1;
    if (o.tag !== '-') j += 1;
  }
  return pairs;
}

function editScript(a: readonly Line[], b: readonly Line[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && keyOf(a[head] as Line) === keyOf(b[head] as Line))
    head += 1;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    keyOf(a[a.length - 1 - tail] as Line) === keyOf(b[b.length - 1 - tail] as Line)
  )
    tail += 1;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const middle = myers(midA, midB) ?? [
    ...midA.map((line) => ({ tag: '-' as const, line })),
    ...midB.map((line) => ({ tag: '+' as const, line })),
  ];
  return [
    ...a.slice(0, head).map((line) => ({ tag: ' ' as const, line })),
    ...middle,
    ...a.slice(a.length - tail).map((line) => ({ tag: ' ' as const, line })),
  ];
}

/** The shortest edit script, or undefined when it needs more than MAX_EDITS edits. */
function myers(a: readonly Line[], b: readonly Line[]): Op[] | undefined {
  const ids = new Map<string, number>();
  const id = (l: Line): number => {
    const k = keyOf(l);
    let v = ids.get(k);
    if (v === undefined) {
      v = ids.size;
      ids.set(k, v);
    }
    return v;
  };
  const x0 = a.map(id);
  const y0 = b.map(id);
  const n = x0.length;
  const m = y0.length;
  const max = Math.min(n + m, MAX_EDITS);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds v[-d-1 .. d+1] as it was before step d.
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d += 1) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && x0[x] === y0[y]) {
        x += 1;
        y += 1;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b);
    }
  }
  return undefined;
}

function backtrack(trace: readonly Int32Array[], a: readonly Line[], b: readonly Line[]): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d -= 1) {
    const v = trace[d] as Int32Array;
    const at = (k: number): number => v[k + d + 1] ?? 0;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ tag: ' ', line: a[x - 1] as Line });
      x -= 1;
      y -= 1;
    }
    if (d > 0) {
      if (x === prevX) ops.push({ tag: '+', line: b[y - 1] as Line });
      else ops.push({ tag: '-', line: a[x - 1] as Line });
    }
    x = prevX;
    y = prevY;
  }
  return ops.reverse();
}

function formatHunks(ops: readonly Op[], context: number): string[] {
  const out: string[] = [];
  const changed = ops.flatMap((o, i) => (o.tag === ' ' ? [] : [i]));
  let i = 0;
  while (i < changed.length) {
    const first = changed[i] as number;
    let last = first;
    // Changes closer than two contexts apart share a hunk.
    while (i + 1 < changed.length && (changed[i + 1] as number) - last <= 2 * context + 1) {
      i += 1;
      last = changed[i] as number;
    }
    i += 1;
    const from = Math.max(0, first - context);
    const to = Math.min(ops.length, last + context + 1);
    let oldLine = 1;
    let newLine = 1;
    for (const o of ops.slice(0, from)) {
      if (o.tag !== '+') oldLine += 1;
      if (o.tag !== '-') newLine += 1;
    }
    const body = ops.slice(from, to);
    const oldLen = body.filter((o) => o.tag !== '+').length;
    const newLen = body.filter((o) => o.tag !== '-').length;
    out.push(`@@ -${range(oldLine, oldLen)} +${range(newLine, newLen)} @@`);
    for (const o of body) {
      out.push(`${o.tag}${o.line.text}`);
      if (o.line.open) out.push(NO_NEWLINE);
    }
  }
  return out;
}

function range(start: number, length: number): string {
  if (length === 0) return `${start - 1},0`;
  return length === 1 ? `${start}` : `${start},${length}`;
}
