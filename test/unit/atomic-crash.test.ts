// AH-ART-2: lifecycle documents are replaced atomically (src/evidence/atomic-file.ts), and
// that holds when the writer is killed mid-write, not only when it finishes. A child process
// replaces one document with ever newer versions (each large, so most of its time is spent
// writing and syncing the temp file) until it is sent SIGKILL at a random moment; the reader
// must then find a complete document, one of the versions written (the prior or the next),
// never a torn one. Some of the kills must land between the temp file's write and its
// rename (a temp file left behind says so), or the test proved nothing.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ATOMIC = path.resolve('src', 'evidence', 'atomic-file.ts');
const KILLS = 12;
const dirs: string[] = [];

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Starts a writer of versions 1, 2, … of `file`; resolves once version 1 is in place. */
function startWriter(file: string) {
  const script = `
    import { writeJsonAtomic } from ${JSON.stringify(ATOMIC)};
    const pad = 'x'.repeat(2 * 1024 * 1024);
    for (let n = 1; ; n += 1) {
      await writeJsonAtomic(${JSON.stringify(file)}, { n, pad, end: n });
      if (n === 1) process.stdout.write('first\\n');
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const first = new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => {
      resolve();
    });
    child.once('exit', (code) => {
      reject(new Error(`writer exited early (${String(code)})`));
    });
  });
  return { child, first };
}

describe('AH-ART-2: a writer killed mid-replace leaves the prior or the next complete document', () => {
  it(`survives ${KILLS} SIGKILLs at random moments`, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-atomic-'));
    dirs.push(dir);
    const file = path.join(dir, 'state.json');
    let leftBehind = 0;
    for (let i = 0; i < KILLS; i += 1) {
      const { child, first } = startWriter(file);
      await first;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 200));
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      const doc = JSON.parse(await readFile(file, 'utf8')) as { n: number; end: number };
      // Complete: its last field is there and agrees with its first.
      expect(Number.isInteger(doc.n) && doc.n >= 1).toBe(true);
      expect(doc.end).toBe(doc.n);
      const temps = (await readdir(dir)).filter((n) => n.endsWith('.tmp'));
      leftBehind += temps.length;
      for (const t of temps) await rm(path.join(dir, t));
    }
    // The kill landed between a temp file's write and its rename at least once.
    expect(leftBehind).toBeGreaterThan(0);
  }, 120_000);
});
