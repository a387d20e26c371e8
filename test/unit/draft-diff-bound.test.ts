// patch.diff's bound (class: host work after a draft run the sandbox multiplies for free):
// a content is inlined once whatever its number of names, and the text inlined in all
// stays within a bound; past it a change is listed by digest and stays applicable (its
// blob, not the diff, is what apply uses). Pure rendering: contents from a map.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { diffTrees } from '../../src/workspace/patch.js';
import { renderPatch, type ContentReader } from '../../src/workspace/patch-text.js';
import type { TreeEntry } from '../../src/workspace/tree.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const file = (p: string, body: string): TreeEntry => ({
  path: p,
  type: 'file',
  mode: 0o644,
  size: Buffer.byteLength(body),
  sha256: sha(body),
});

function readerOf(bodies: Map<string, string>): { read: ContentReader; reads: () => number } {
  let reads = 0;
  return {
    read: (c, side) => {
      reads++;
      const s = side === 'before' ? c.before : c.after;
      return Promise.resolve(Buffer.from(bodies.get(s?.sha256 ?? '') ?? ''));
    },
    reads: () => reads,
  };
}

describe('patch.diff bound: inlined once and within a total', () => {
  it('many names of one content inline it once, the others point to it', async () => {
    const body = 'line\n'.repeat(2000);
    const after = Array.from({ length: 50 }, (_, i) =>
      file(`t${String(i).padStart(2, '0')}`, body),
    );
    const changes = diffTrees([], after);
    const { read, reads } = readerOf(new Map([[sha(body), body]]));
    const r = await renderPatch(changes, read);
    expect(r.text.length).toBeLessThan(2 * body.length + 50 * 200);
    expect(
      r.text.split('\n').filter((l) => l.startsWith('# same new contents as t00')).length,
    ).toBe(49);
    // Not even read again: the cost is the first name's.
    expect(reads()).toBeLessThanOrEqual(2);
    expect(r.changes.every((c) => c.applicable)).toBe(true);
    expect(r.inline.reached).toBe(false);
  });

  it('variant: many distinct contents stop inlining at the bound, and say so', async () => {
    const bodies = new Map<string, string>();
    const after: TreeEntry[] = [];
    for (let i = 0; i < 40; i++) {
      const body = `${String(i)}\n`.repeat(5000);
      bodies.set(sha(body), body);
      after.push(file(`f${String(i).padStart(2, '0')}`, body));
    }
    const max = 64 * 1024;
    const r = await renderPatch(diffTrees([], after), readerOf(bodies).read, max);
    expect(r.inline.bytes).toBeLessThanOrEqual(max);
    expect(r.inline.reached).toBe(true);
    // Each inlined line gains a one-character prefix: at most twice the contents, plus headers.
    expect(r.text.length).toBeLessThan(2 * max + 40 * 300);
    expect(r.text).toContain('# text not shown: patch.diff inlines at most 65536 bytes');
    expect(r.changes.every((c) => c.applicable)).toBe(true);
  });
});
