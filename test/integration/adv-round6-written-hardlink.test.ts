// Round 6 (red team): what a run wrote into a FILE mount with a second name (a hard link)
// does not stay in the label of the tree that holds the other name.
//
// docs/operators.md, "What a run wrote stays in the tree's label": "a later mount of the
// tree, of a directory inside it, or of one holding it, under any path, joins the label";
// docs/conformance.md AH-CFC-2: "a later run mounts a tree sharing files with a record at
// least at its label". host-trees.ts itself says a file with more than one name "is taken to
// share files with every tree on its file system" (and planning refuses two such mounts under
// two labels). But a record keeps only the file's place: placedTree() gives it `names: 1`, so
// the directory holding the file's other name matches nothing, and the secret the first run
// wrote through one name is read by the next run, through the other name, under the
// directory's configured (public) label.
//
// The test asserts the secure behaviour, so it FAILS while the break exists.
import { chown, link, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SANDBOX_UID, useScratch } from './helpers.js';
import {
  dirIn,
  plainDir,
  mountLabel,
  mountTmpfs,
  runIn,
  snapshotOf,
  stateEnv,
  umount,
} from './adv-round6-support.js';

const scratch = useScratch('adv6-hardlink');
const TOKEN = 'HARDLINK-SECRET-7fQ2xL9p';
let fs: string | undefined;

afterAll(async () => {
  if (fs !== undefined) await umount(fs);
});

describe('round 6: a written file mount with a second name', () => {
  it('a directory holding the other name of a file a run wrote a secret into is mounted at the secret', async () => {
    const env = await stateEnv(scratch, 'hl');
    const art = await plainDir(scratch, 'art');
    const ws = await dirIn(scratch, 'ws');
    // The linked pair on a file system of its own (the writer's workspace is elsewhere, so
    // planning has no reason to refuse the writer).
    fs = scratch.path('fs');
    await mountTmpfs(fs);
    const docs = path.join(fs, 'docs');
    const share = path.join(fs, 'share');
    for (const d of [docs, share]) {
      await (await import('node:fs/promises')).mkdir(d);
      await chown(d, SANDBOX_UID, SANDBOX_UID);
    }
    await writeFile(path.join(docs, 'notes.txt'), 'public notes\n');
    await chown(path.join(docs, 'notes.txt'), SANDBOX_UID, SANDBOX_UID);
    await link(path.join(docs, 'notes.txt'), path.join(share, 'notes.txt'));

    // 1. A command run whose container reads a secret writes it into the file mount.
    const first = await runIn(
      art,
      [
        '--cfc',
        'enforce-explicit',
        '--workspace',
        ws,
        '--workspace-mode',
        'ro',
        '--mount',
        `${path.join(share, 'notes.txt')}:/out/notes.txt:rw`,
        '--env',
        'SECRET',
        '--label',
        'env:SECRET=secret',
        '--',
        'sh',
        '-c',
        'printf "%s\\n" "$SECRET" > /out/notes.txt',
      ],
      { ...env, SECRET: TOKEN },
    );
    expect(first.r.exitCode, first.r.stderr).toBe(0);
    // It is recorded: the file mount's tree now holds [secret].
    expect(await readFile(path.join(docs, 'notes.txt'), 'utf8')).toContain(TOKEN);

    // 2. A later run mounts the directory holding the file's other name.
    const later = await runIn(
      art,
      [
        '--cfc',
        'enforce-strict',
        '--workspace',
        docs,
        '--workspace-mode',
        'ro',
        '--label',
        '/workspace=i:repo',
        '--',
        'true',
      ],
      env,
    );
    expect(later.r.exitCode, later.r.stderr).toBe(0);
    const snap = await snapshotOf(later.dir ?? '');
    // Secure: the directory shares the written file, so it is mounted at least at [secret].
    expect(mountLabel(snap, '/workspace')).toContain('secret');
  });
});
