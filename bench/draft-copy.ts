// What draft mode costs on the host (governance extension, "Draft vs commit policy"): the
// copy of a workspace (every file read, hashed and written) against Node's own fs.cp of the
// same tree, and the end walk (every file read and hashed) against a bare read of every
// file, in the same process, on a tree this bench makes. Ratios, not absolute times.
//   bench/run.sh draft [files-per-dir] [dirs] [bytes] [rounds]
import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { copyTree } from '../src/workspace/copy-tree.js';
import { listTree } from '../src/workspace/walk.js';
import { median } from './stats.js';

const [perDir = 100, dirs = 20, bytes = 5000, rounds = 5] = process.argv
  .slice(2)
  .map((a) => Number(a));
const signal = new AbortController().signal;

async function readAll(dir: string): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await readAll(p);
    else await readFile(p);
  }
}

async function main(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'cfh-bench-draft-'));
  try {
    const src = path.join(scratch, 'src');
    for (let d = 0; d < dirs; d += 1) {
      await mkdir(path.join(src, `d${d}`), { recursive: true });
      for (let f = 0; f < perDir; f += 1)
        await writeFile(path.join(src, `d${d}`, `f${f}`), randomBytes(bytes));
    }
    const copy: number[] = [];
    const baseline: number[] = [];
    const walk: number[] = [];
    const read: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      const round = path.join(scratch, `r${r}`);
      await mkdir(path.join(round, 'draft'), { recursive: true, mode: 0o700 });
      // Alternate which goes first, so the page cache favours neither.
      const order = r % 2 === 0 ? ['cp', 'copy'] : ['copy', 'cp'];
      for (const what of order) {
        const t = performance.now();
        if (what === 'cp') await cp(src, path.join(round, 'cp'), { recursive: true });
        else await copyTree(src, path.join(round, 'draft'), { signal });
        (what === 'cp' ? baseline : copy).push(performance.now() - t);
      }
      let t = performance.now();
      await readAll(path.join(round, 'cp'));
      read.push(performance.now() - t);
      t = performance.now();
      await listTree(path.join(round, 'draft'), { signal });
      walk.push(performance.now() - t);
      await rm(round, { recursive: true, force: true });
    }
    const files = perDir * dirs;
    const mb = (files * bytes) / 1e6;
    console.log(`tree: ${files} files, ${mb.toFixed(1)} MB; ${rounds} rounds, p50`);
    console.log(
      `copy (hash + write)  ${median(copy).toFixed(0)} ms   fs.cp ${median(baseline).toFixed(0)} ms   ratio ${(median(copy) / median(baseline)).toFixed(2)}`,
    );
    console.log(
      `end walk (hash)      ${median(walk).toFixed(0)} ms   read all ${median(read).toFixed(0)} ms   ratio ${(median(walk) / median(read)).toFixed(2)}`,
    );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

await main();
