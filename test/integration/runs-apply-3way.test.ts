// `cfh runs apply --3way` and `cfh runs diff --binary` against real draft runs (governance
// extension, "Draft vs commit policy"). The class: the host changed a file the run also
// changed. Where the changes do not overlap, --3way merges them (byte-exact, the merge
// recorded in the `applied` event); where they do, it refuses with the conflicting hunks
// and writes nothing, all or nothing across files; what a merge cannot resolve (a file
// the run removed, a binary file) stays a refusal. The binary patch is applied by the
// host's own git to a copy of the baseline and gives the draft's end state.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, cp, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cfh, onlyRunDir, runIdOf, SANDBOX_UID, useScratch } from './helpers.js';

const scratch = useScratch('apply-3way');
const isRoot = process.getuid?.() === 0;

const numbered = (n: number, tag: string): string =>
  Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');

/** Replaces line `n` (1-based) of a text. */
const withLine = (text: string, n: number, line: string): string =>
  text
    .split('\n')
    .map((l, i) => (i === n - 1 ? line : l))
    .join('\n');

let repos = 0;
async function workspace(files: Record<string, string | Buffer>): Promise<string> {
  repos += 1;
  const ws = scratch.path(`ws-${repos}`);
  await chmod(path.dirname(ws), 0o755);
  await mkdir(ws, { recursive: true });
  for (const [name, body] of Object.entries(files)) await writeFile(path.join(ws, name), body);
  if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

async function draftRun(ws: string, script: string): Promise<{ root: string; runId: string }> {
  repos += 1;
  const root = scratch.path(`art-${repos}`);
  const r = await cfh([
    'sandbox',
    'run',
    '--workspace',
    ws,
    '--workspace-mode',
    'draft',
    '--artifact-root',
    root,
    '--',
    'sh',
    '-c',
    script,
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return { root, runId: runIdOf(await onlyRunDir(root)) };
}

const apply = (root: string, runId: string, extra: string[] = []) =>
  cfh(['runs', 'apply', runId, '--artifact-root', root, '--yes', ...extra]);

async function eventsOf(root: string, runId: string): Promise<{ type: string; data: unknown }[]> {
  const text = await readFile(path.join(root, runId, 'events.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; data: unknown });
}

const sed = (n: number, line: string, file: string): string => `sed -i '${n}s/.*/${line}/' ${file}`;

describe('runs apply --3way: the host changed a file the run changed', () => {
  it('changes that do not overlap merge; without --3way the apply refuses and says --3way', async () => {
    const notes = numbered(40, 'note');
    const ws = await workspace({
      'notes.txt': notes,
      'tool.sh': '#!/bin/sh\necho one\necho two\necho three\necho four\necho five\necho six\n',
      'keep.bin': Buffer.from([0, 1, 2, 3]),
    });
    const { root, runId } = await draftRun(
      ws,
      [
        'set -e',
        sed(35, 'run edit', 'notes.txt'),
        sed(7, 'echo SIX', 'tool.sh'),
        "printf '\\000\\377\\376binary\\000' > keep.bin",
        'printf "new\\n" > added.txt',
      ].join('\n'),
    );
    // The host edits other lines of the same files, and sets an executable bit, after the run.
    await writeFile(path.join(ws, 'notes.txt'), withLine(notes, 3, 'host edit'));
    const tool = await readFile(path.join(ws, 'tool.sh'), 'utf8');
    await writeFile(path.join(ws, 'tool.sh'), withLine(tool, 2, 'echo ONE'));
    await chmod(path.join(ws, 'tool.sh'), 0o755);

    const plain = await apply(root, runId);
    expect(plain.exitCode).toBe(1);
    expect(plain.stderr).toMatch(
      /^cfh: the host workspace changed since the run.*contents changed on the host.*--3way/m,
    );
    expect(await readFile(path.join(ws, 'notes.txt'), 'utf8')).toBe(
      withLine(notes, 3, 'host edit'),
    );

    const merged = await apply(root, runId, ['--3way']);
    expect(merged.exitCode, merged.stderr).toBe(0);
    expect(merged.stdout).toMatch(/merged +notes\.txt/);
    expect(await readFile(path.join(ws, 'notes.txt'), 'utf8')).toBe(
      withLine(withLine(notes, 3, 'host edit'), 35, 'run edit'),
    );
    expect(await readFile(path.join(ws, 'tool.sh'), 'utf8')).toBe(
      withLine(withLine(tool, 2, 'echo ONE'), 7, 'echo SIX'),
    );
    // The host's executable bit is kept: the run did not change it.
    expect((await stat(path.join(ws, 'tool.sh'))).mode & 0o100).toBe(0o100);
    // The binary change the host did not touch applies through cfh, byte for byte.
    expect(await readFile(path.join(ws, 'keep.bin'))).toEqual(
      Buffer.from([0, 0o377, 0o376, ...Buffer.from('binary'), 0]),
    );
    expect(await readFile(path.join(ws, 'added.txt'), 'utf8')).toBe('new\n');
    const applied = (await eventsOf(root, runId)).filter((e) => e.type === 'applied');
    expect(applied).toHaveLength(1);
    expect(applied[0]?.data).toMatchObject({
      merged: expect.arrayContaining([
        expect.objectContaining({ path: 'notes.txt' }),
        expect.objectContaining({ path: 'tool.sh' }),
      ]) as unknown,
    });
    // The evidence, the merge record included, still audits.
    const audit = await cfh(['audit', '--artifact-root', root, runId]);
    expect(audit.exitCode, audit.stdout).toBe(0);
  });

  it('overlapping changes: refused with the hunks, nothing written in any file', async () => {
    const a = numbered(20, 'a');
    const c = numbered(30, 'c');
    const ws = await workspace({ 'a.txt': a, 'c.txt': c });
    const { root, runId } = await draftRun(
      ws,
      ['set -e', sed(5, 'run five', 'a.txt'), sed(1, 'run one', 'c.txt'), 'echo b > b.txt'].join(
        '\n',
      ),
    );
    const hostA = withLine(a, 5, 'host five');
    const hostC = withLine(c, 25, 'host twenty-five');
    await writeFile(path.join(ws, 'a.txt'), hostA);
    await writeFile(path.join(ws, 'c.txt'), hostC);
    const r = await apply(root, runId, ['--3way']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(
      /<<<<<<< host \(line 5\)\nhost five\n\|\|\|\|\|\|\| baseline \(line 5\)\na 5\n=======\nrun five\n>>>>>>> run /,
    );
    expect(r.stderr).toMatch(
      /^cfh: --3way: 1 file\(s\).*a\.txt: 1 conflicting hunk.*nothing was applied/m,
    );
    // All or nothing: c.txt merged cleanly but is not written, b.txt is not added.
    expect(await readFile(path.join(ws, 'a.txt'), 'utf8')).toBe(hostA);
    expect(await readFile(path.join(ws, 'c.txt'), 'utf8')).toBe(hostC);
    await expect(stat(path.join(ws, 'b.txt'))).rejects.toThrow();
    expect((await eventsOf(root, runId)).some((e) => e.type === 'applied')).toBe(false);
    // The host resolves its side (back to the baseline): the apply now goes through.
    await writeFile(path.join(ws, 'a.txt'), a);
    const again = await apply(root, runId, ['--3way']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(await readFile(path.join(ws, 'a.txt'), 'utf8')).toBe(withLine(a, 5, 'run five'));
    expect(await readFile(path.join(ws, 'c.txt'), 'utf8')).toBe(withLine(hostC, 1, 'run one'));
  });

  it('variants no merge resolves: a file the run removed, a binary file both changed', async () => {
    const ws = await workspace({
      'gone.txt': numbered(10, 'g'),
      'blob.bin': Buffer.from([0, 1, 2, 3, 4, 5]),
      'ok.txt': numbered(10, 'o'),
    });
    const { root, runId } = await draftRun(
      ws,
      ['set -e', 'rm gone.txt', "printf '\\000run' > blob.bin", sed(1, 'run', 'ok.txt')].join('\n'),
    );
    await writeFile(path.join(ws, 'gone.txt'), withLine(numbered(10, 'g'), 9, 'host'));
    await writeFile(path.join(ws, 'blob.bin'), Buffer.from([0, 9, 9]));
    const r = await apply(root, runId, ['--3way']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(
      /gone\.txt: contents changed on the host since the run \(not a file --3way can merge\)/,
    );
    expect(r.stderr).toMatch(/blob\.bin: binary/);
    expect(await readFile(path.join(ws, 'ok.txt'), 'utf8')).toBe(numbered(10, 'o'));
    expect(await readFile(path.join(ws, 'blob.bin'))).toEqual(Buffer.from([0, 9, 9]));
  });
});

describe('runs diff --binary: a patch the host git applies whole', () => {
  it('binary, text, added and removed changes: git apply on a copy of the baseline gives the draft', async () => {
    const big = Buffer.alloc(1_500_000, 0x61);
    const ws = await workspace({
      'img.bin': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0xff]),
      'text.txt': numbered(10, 't'),
      'old.bin': Buffer.from([0, 0, 1]),
      'big.txt': big,
    });
    const baseline = scratch.path(`baseline-${repos}`);
    await cp(ws, baseline, { recursive: true });
    const script = [
      'set -e',
      "printf '\\211PNG\\000\\001\\002\\377' > img.bin",
      sed(4, 'four', 'text.txt'),
      'rm old.bin',
      "printf '\\000\\001new' > new.bin",
      'printf b >> big.txt',
      'ln -s /etc/passwd link',
    ].join('\n');
    const { root, runId } = await draftRun(ws, script);
    const expected = scratch.path(`expected-${repos}`);
    await cp(baseline, expected, { recursive: true });
    execFileSync('sh', ['-c', script.replace('ln -s /etc/passwd link', 'true')], { cwd: expected });

    const plain = await cfh(['runs', 'diff', runId, '--artifact-root', root]);
    expect(plain.stdout).toMatch(/^Binary files a\/img\.bin and b\/img\.bin differ$/m);
    const diff = await cfh(['runs', 'diff', '--binary', runId, '--artifact-root', root]);
    expect(diff.exitCode, diff.stderr).toBe(0);
    expect(diff.stdout).toMatch(/^GIT binary patch$/m);
    expect(diff.stdout).toMatch(/^# not applied by cfh runs apply, left out: link/m);
    const git = spawnSync('git', ['apply', '-'], { cwd: baseline, input: diff.stdout });
    expect(git.stderr.toString()).toBe('');
    expect(git.status).toBe(0);
    for (const name of ['img.bin', 'text.txt', 'new.bin', 'big.txt'])
      expect(await readFile(path.join(baseline, name))).toEqual(
        await readFile(path.join(expected, name)),
      );
    await expect(stat(path.join(baseline, 'old.bin'))).rejects.toThrow();
    await expect(stat(path.join(baseline, 'link'))).rejects.toThrow();
  });
});
