// The 3-way line merge of `cfh runs apply --3way` (merge3.ts): changes to different lines
// merge byte-exact, changes to the same or adjacent lines are conflicts with the three
// versions shown, and a merge never invents or drops a line one side did not change.
import { describe, expect, it } from 'vitest';
import { conflictLines, merge3, splitLines } from '../../src/workspace/merge3.js';

const lines = (n: number, tag = 'l'): string =>
  Array.from({ length: n }, (_, i) => `${tag}${i + 1}\n`).join('');

function edit(text: string, at: number, to: string): string {
  const l = splitLines(text);
  l[at] = to;
  return l.join('');
}

describe('merge3: changes that do not overlap merge', () => {
  it('the host and the run edit lines far apart: both kept, in place', () => {
    const base = lines(20);
    const host = edit(base, 2, 'HOST\n');
    const run = edit(base, 15, 'RUN\n');
    const r = merge3(base, host, run);
    expect(r).toEqual({ ok: true, text: edit(edit(base, 2, 'HOST\n'), 15, 'RUN\n') });
  });

  it('insertions at the start by one side and at the end by the other', () => {
    const base = lines(5);
    const r = merge3(base, `top\n${base}`, `${base}bottom`);
    expect(r).toEqual({ ok: true, text: `top\n${base}bottom` });
  });

  it('the same change on both sides is taken once', () => {
    const base = lines(8);
    const both = edit(base, 4, 'SAME\n');
    expect(merge3(base, both, both)).toEqual({ ok: true, text: both });
  });

  it('a deletion on one side and an edit elsewhere on the other', () => {
    const base = lines(12);
    const host = splitLines(base)
      .filter((_, i) => i !== 1)
      .join('');
    const run = edit(base, 10, 'RUN\n');
    const r = merge3(base, host, run);
    expect(r.ok && r.text).toBe(
      splitLines(edit(base, 10, 'RUN\n'))
        .filter((_, i) => i !== 1)
        .join(''),
    );
  });

  it('line endings and a missing final newline survive byte for byte', () => {
    const base = 'a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng';
    const host = base.replace('a\r\n', 'A\r\n');
    const run = base.replace('\r\ng', '\r\nG');
    expect(merge3(base, host, run)).toEqual({ ok: true, text: 'A\r\nb\r\nc\r\nd\r\ne\r\nf\r\nG' });
  });

  it('variant: many disjoint edits on both sides, interleaved, always merge to both', () => {
    const base = lines(200);
    let host = base;
    let run = base;
    let want = base;
    for (let i = 0; i < 200; i += 10) {
      const side = (i / 10) % 2 === 0 ? 'H' : 'R';
      if (side === 'H') host = edit(host, i, `H${i}\n`);
      else run = edit(run, i, `R${i}\n`);
      want = edit(want, i, `${side}${i}\n`);
    }
    expect(merge3(base, host, run)).toEqual({ ok: true, text: want });
  });
});

describe('merge3: changes that overlap are conflicts', () => {
  it('both sides change the same line: one conflict naming the three versions', () => {
    const base = lines(10);
    const r = merge3(base, edit(base, 5, 'HOST\n'), edit(base, 5, 'RUN\n'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.conflicts).toEqual([
      { baseLine: 6, hostLine: 6, runLine: 6, base: ['l6\n'], host: ['HOST\n'], run: ['RUN\n'] },
    ]);
    const [first] = r.conflicts;
    if (first === undefined) throw new Error('no conflict');
    expect(conflictLines(first, 'RID')).toEqual([
      '<<<<<<< host (line 6)',
      'HOST',
      '||||||| baseline (line 6)',
      'l6',
      '=======',
      'RUN',
      '>>>>>>> run RID (line 6)',
    ]);
  });

  it('adjacent lines changed by each side conflict (as git merge-file does)', () => {
    const base = lines(10);
    const r = merge3(base, edit(base, 4, 'HOST\n'), edit(base, 5, 'RUN\n'));
    expect(r.ok).toBe(false);
  });

  it('a deletion on one side against an edit of the same line on the other', () => {
    const base = lines(10);
    const host = splitLines(base)
      .filter((_, i) => i !== 3)
      .join('');
    const r = merge3(base, host, edit(base, 3, 'RUN\n'));
    expect(r.ok).toBe(false);
  });

  it('variant: both sides append different endings to a file without a final newline', () => {
    const base = 'one\ntwo';
    const r = merge3(base, 'one\ntwo-host', 'one\ntwo-run');
    expect(r.ok).toBe(false);
    if (!r.ok && r.conflicts[0] !== undefined)
      expect(conflictLines(r.conflicts[0], 'R')[1]).toBe('two-host (no newline at end)');
  });
});
