// A tree a delegating run hands its child keeps at least the parent's label there (AH-CFC-12,
// docs/operators.md "A context carried over a boundary keeps its label"): a child profile
// that mounts part of the parent's labelled mount under a path of its own, with a weaker
// label, reads it under the parent's label too, found by the tree's identity, not by the
// workspace it is handed. The oracle: the parent does not write what the child read into a
// mount that is not cleared for the parent's label. (A link to it is refused outright where
// anyone could have made it, and a bind mount is the same tree by identity: host-trees.ts.)
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownBySandbox, readEvents, useScratch } from './helpers.js';
import { apiCfh, profile, script, scriptedRun } from './adv-round3-support.js';

const scratch = useScratch('carry-child-trees');
const INTERNAL = 'TEAM-NOTES-7Wq2Lp9X';

describe("a child mounts its parent's labelled tree under another path", () => {
  it.each([
    ['a directory inside it', 'team', 'notes.txt'],
    ['a directory holding it', '..', 'data/team/notes.txt'],
  ])('%s: what the child reads keeps the parent label', async (what, under, file) => {
    const base = scratch.path(`tree-${what.replace(/ /g, '-')}`);
    const data = path.join(base, 'data');
    await mkdir(path.join(data, 'team'), { recursive: true });
    for (const d of [base, data, path.join(data, 'team')]) await chmod(d, 0o755);
    await writeFile(path.join(data, 'team', 'notes.txt'), `${INTERNAL}\n`, { mode: 0o644 });
    await chmod(path.join(data, 'team', 'notes.txt'), 0o644);
    const out = path.join(base, '..', `out-${path.basename(base)}`);
    await mkdir(out);
    await ownBySandbox(out);
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir', 'write_file'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      mounts: [
        { source: data, target: '/data', mode: 'ro', label: { confidentiality: ['internal'] } },
        { source: out, target: '/out', mode: 'rw', label: { integrity: ['out'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: ['internal'] },
      children: {
        reader: {
          tools: ['read_file'],
          mounts: [
            {
              source: path.resolve(data, under),
              target: '/mine',
              mode: 'ro',
              label: { integrity: ['mine'] },
            },
          ],
          cfc: { mode: 'enforce-explicit', modelClearance: ['internal'] },
        },
      },
    });
    const found = (req: string): string => /TEAM-NOTES-[A-Za-z0-9]+/.exec(req)?.[0] ?? 'none';
    const run = await apiCfh(
      scratch,
      [
        'sandbox',
        'run',
        '--profile',
        p,
        '--workspace',
        await scratch.sampleRepo(),
        '--artifact-root',
        path.join(base, '..', `art-${path.basename(base)}`),
        '--prompt',
        'Copy the team notes to /out',
        '--non-interactive',
      ],
      [
        { calls: [{ name: 'delegate', input: { profile: 'reader', task: 'read the notes' } }] },
        { calls: [{ name: 'read_file', input: { path: `/mine/${file}` } }] },
        { text: (req: string) => `they say ${found(req)}` },
        {
          calls: (req) => [
            { name: 'write_file', input: { path: '/out/notes.txt', content: found(req) } },
          ],
        },
        { text: 'done' },
      ],
    );
    expect(run.r.exitCode, run.r.stderr).toBe(0);
    // The child's model was cleared for `internal` and saw it: the control that it flowed.
    expect(run.bodies.join('\n'), 'the child read the notes').toContain(INTERNAL);
    const written = await readFile(path.join(out, 'notes.txt'), 'utf8').catch(() => '');
    expect(written).not.toContain(INTERNAL);
  });
});

describe('a child under a ceiling handed a tree its parent labels above it', () => {
  it('is refused before it runs (child_ceiling_exceeded), and the parent goes on', async () => {
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir'],
      workspace: { mode: 'ro', label: { confidentiality: ['internal'], integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: ['internal'] },
      children: {
        reader: { tools: ['read_file'], ceiling: { confidentiality: [] } },
      },
    });
    const run = await scriptedRun(scratch, {
      profile: p,
      script: await script(scratch, [
        [{ name: 'delegate', input: { profile: 'reader', task: 'read README.md' } }],
      ]),
    });
    expect(run.r.exitCode, run.r.stderr).toBe(0);
    const refused = (await readEvents(run.dir)).filter((e) => e.type === 'child_refused');
    expect(refused.map((e) => e.data.code)).toEqual(['child_ceiling_exceeded']);
    expect(String(refused[0]?.data.message)).toMatch(/mount \/workspace .*\[internal\]/);
  });
});
