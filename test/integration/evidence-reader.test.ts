// Adversarial: every command that reads a run directory reads it through the bounded reader
// (src/evidence/run-reader.ts; AH-ART-1, AH-ART-3). The class: an entry of a run directory
// (or the directory itself) that a sandbox, a host tool or another user replaced with what
// cfh must not read: a link (to /dev/zero, to a file outside, on the way to a file), a FIFO,
// a directory, a file bigger than the evidence declares. Each case damages a copy of a real
// run; `cfh audit`, `runs show`, `runs list`, `runs report`, `runs export` and `runs diff`
// must each finish within a few seconds (else it is sent SIGTERM, and must exit on it), name
// the bad entry in their own words, and exit as the README says (audit: 1 a check failed,
// 2 evidence it cannot read).
import { execFileSync } from 'node:child_process';
import { chmod, cp, mkdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cfh, onlyRunDir, runIdOf, startCfh, useScratch, type CfhResult } from './helpers.js';

const scratch = useScratch('evidence-reader');
let commandRun: string;
let draftRun: string;
let copies = 0;
/** A command that has not finished by then hangs: it is sent SIGTERM. */
const DEADLINE_MS = 12_000;

beforeAll(async () => {
  const ws = await scratch.sampleRepo();
  // A draft is copied, and applied, as the workspace's owner, who must reach it.
  await chmod(path.dirname(ws), 0o755);
  const art = scratch.path('art-command');
  const r = await cfh(['sandbox', 'run', '--workspace', ws, '--artifact-root', art, '--', 'ls']);
  expect(r.exitCode, r.stderr).toBe(0);
  commandRun = await onlyRunDir(art);
  const drafts = scratch.path('art-draft');
  const d = await cfh([
    'sandbox',
    'run',
    '--workspace',
    ws,
    '--workspace-mode',
    'draft',
    '--artifact-root',
    drafts,
    '--',
    'sh',
    '-c',
    'echo new > new-file.txt',
  ]);
  expect(d.exitCode, d.stderr).toBe(0);
  draftRun = await onlyRunDir(drafts);
});

async function copyOf(run: string): Promise<{ root: string; dir: string; id: string }> {
  const root = scratch.path(`copy-${copies++}`);
  const dir = path.join(root, path.basename(run));
  await cp(run, dir, { recursive: true });
  return { root, dir, id: runIdOf(dir) };
}

interface Timed extends CfhResult {
  readonly ms: number;
  readonly hung: boolean;
}

/** Runs cfh; past the deadline it is sent SIGTERM, and 5 s later SIGKILL. */
async function timed(args: readonly string[], env: Record<string, string> = {}): Promise<Timed> {
  const t0 = Date.now();
  const child = startCfh(args, { env });
  let hung = false;
  const term = setTimeout(() => {
    hung = true;
    child.kill('SIGTERM');
  }, DEADLINE_MS);
  const kill = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS + 5_000);
  const result = await child;
  clearTimeout(term);
  clearTimeout(kill);
  return {
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
    pid: child.pid ?? -1,
    ms: Date.now() - t0,
    hung,
  };
}

const out = (r: Timed): string => `${r.stdout}\n${r.stderr}`;

/** Each reading command over the damaged copy, one after the other. */
async function everyCommand(root: string, id: string) {
  const html = scratch.path(`page-${copies}.html`);
  const otlp = scratch.path(`spans-${copies}.json`);
  const at = ['--artifact-root', root];
  return {
    audit: await timed(['audit', ...at, id]),
    show: await timed(['runs', 'show', ...at, id]),
    list: await timed(['runs', 'list', ...at]),
    report: await timed(['runs', 'report', ...at, id, '--out', html]),
    reportPage: html,
    export: await timed(['runs', 'export', ...at, id, '--format', 'otlp-json', '--out', otlp]),
    diff: await timed(['runs', 'diff', ...at, id]),
  };
}

function expectFinished(results: Record<string, Timed | string>): void {
  for (const [name, r] of Object.entries(results)) {
    if (typeof r === 'string') continue;
    expect(r.hung, `${name} did not finish in ${DEADLINE_MS} ms: ${out(r)}`).toBe(false);
    // Sent SIGTERM, a command must have exited on it (not been killed by SIGKILL).
    expect(r.exitCode, `${name}: ${out(r)}`).not.toBe(-1);
  }
}

const outside = async (): Promise<string> => {
  const file = scratch.path(`outside-${copies}.txt`);
  await writeFile(file, 'a host file outside the run directory\n');
  return file;
};

/** Damage done to outputs/stdout of a command run, and the words each command must use. */
const OUTPUT_CASES: [string, (file: string) => Promise<void>, RegExp][] = [
  [
    'a link to /dev/zero',
    async (f) => {
      await rm(f);
      await symlink('/dev/zero', f);
    },
    /outputs\/stdout: a symbolic link.*, not followed/,
  ],
  [
    'a FIFO',
    async (f) => {
      await rm(f);
      execFileSync('mkfifo', [f]);
    },
    /outputs\/stdout: a fifo, not a regular file/,
  ],
  [
    'a link to a file outside the run directory',
    async (f) => {
      await rm(f);
      await symlink(await outside(), f);
    },
    /outputs\/stdout: a symbolic link.*, not followed/,
  ],
  [
    'a directory',
    async (f) => {
      await rm(f);
      await mkdir(f);
    },
    /outputs\/stdout: a directory, not a regular file/,
  ],
  [
    'a file of 64 GiB (sparse), far past its recorded size',
    (f) => truncate(f, 64 * 1024 ** 3),
    /outputs\/stdout: \d+ bytes, more than the \d+ it may hold/,
  ],
];

describe('every evidence reader is bounded: no link followed, regular files only, sizes from the evidence', () => {
  it.each(OUTPUT_CASES)('outputs/stdout replaced by %s', async (_name, damage, words) => {
    const { root, dir, id } = await copyOf(commandRun);
    await damage(path.join(dir, 'outputs', 'stdout'));
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.audit.exitCode, out(r.audit)).toBe(1);
    expect(r.audit.stdout).toMatch(words);
    expect(r.show.exitCode, out(r.show)).toBe(1);
    expect(r.show.stdout).toMatch(/evidence\s+BROKEN/);
    expect(r.show.stdout).toMatch(words);
    expect(r.list.exitCode, out(r.list)).toBe(0);
    expect(r.list.stdout).toContain(id);
    expect(r.report.exitCode, out(r.report)).toBe(0);
    expect(await readFile(r.reportPage, 'utf8')).toMatch(words);
    expect(r.export.exitCode, out(r.export)).toBe(0);
    expect(r.export.stderr).toMatch(/its evidence does not verify/);
    expect(r.export.stderr).toMatch(words);
    expect(r.diff.exitCode, out(r.diff)).not.toBe(0);
  });

  it('outputs/ itself replaced by a link to a directory outside (a link on the way)', async () => {
    const { root, dir, id } = await copyOf(commandRun);
    const elsewhere = scratch.path(`elsewhere-${copies}`);
    await cp(path.join(dir, 'outputs'), elsewhere, { recursive: true });
    await rm(path.join(dir, 'outputs'), { recursive: true });
    await symlink(elsewhere, path.join(dir, 'outputs'));
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.audit.exitCode, out(r.audit)).toBe(1);
    expect(r.audit.stdout).toMatch(/outputs: a symbolic link, not followed/);
    expect(r.show.exitCode).toBe(1);
    expect(r.show.stdout).toMatch(
      /outputs\/stdout: a symbolic link on its way \(outputs\), not followed/,
    );
  });

  it('events.jsonl replaced by a link to /dev/zero: audit says it cannot read the evidence (2)', async () => {
    const { root, dir, id } = await copyOf(commandRun);
    await rm(path.join(dir, 'events.jsonl'));
    await symlink('/dev/zero', path.join(dir, 'events.jsonl'));
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.audit.exitCode, out(r.audit)).toBe(2);
    expect(r.audit.stderr).toMatch(/events\.jsonl: a symbolic link/);
    expect(r.show.exitCode).toBe(1);
    expect(r.show.stdout).toMatch(/events\.jsonl: a symbolic link/);
    expect(r.list.exitCode).toBe(0);
    expect(r.report.exitCode, out(r.report)).toBe(2);
    expect(r.export.exitCode, out(r.export)).toBe(2);
  });

  it('state.json replaced by a FIFO: runs list says so and does not block', async () => {
    const { root, dir, id } = await copyOf(commandRun);
    await rm(path.join(dir, 'state.json'));
    execFileSync('mkfifo', [path.join(dir, 'state.json')]);
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.list.exitCode, out(r.list)).toBe(0);
    expect(r.list.stdout).toMatch(new RegExp(`${id}.*unreadable: state\\.json: a fifo`));
    expect(r.audit.exitCode, out(r.audit)).toBe(1);
    expect(r.audit.stdout).toMatch(/state\.json: a fifo, not a regular file/);
    expect(r.show.exitCode).toBe(1);
    expect(r.show.stdout).toMatch(/state\.json: a fifo/);
  });

  it('report.json past the bound of a document (20 MiB of JSON): not read', async () => {
    const { root, dir, id } = await copyOf(commandRun);
    await writeFile(path.join(dir, 'report.json'), `"${'x'.repeat(20 * 1024 * 1024)}"`);
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.audit.exitCode, out(r.audit)).toBe(1);
    expect(r.audit.stdout).toMatch(/report\.json: \d+ bytes, more than the 16777216 it may hold/);
  });

  it('the run directory itself a link to another run: not followed', async () => {
    const { root, dir } = await copyOf(commandRun);
    const other = path.join(root, '20990101T000000Z-0badc0de');
    await symlink(dir, other);
    const id = path.basename(other);
    const r = await everyCommand(root, id);
    expectFinished(r);
    expect(r.audit.exitCode, out(r.audit)).toBe(2);
    expect(r.audit.stderr).toMatch(/a symbolic link/);
    expect(r.show.exitCode).not.toBe(0);
    expect(out(r.show)).toMatch(/a symbolic link/);
    expect(r.list.stdout).toMatch(new RegExp(`${id}\\s+unreadable`));
  });

  it('a draft run whose patch.diff is a FIFO and patch.json a link to /dev/zero: diff and apply refuse at once', async () => {
    const { root, dir, id } = await copyOf(draftRun);
    await rm(path.join(dir, 'patch', 'patch.diff'));
    execFileSync('mkfifo', [path.join(dir, 'patch', 'patch.diff')]);
    const diff = await timed(['runs', 'diff', '--artifact-root', root, id]);
    expectFinished({ diff });
    expect(diff.exitCode, out(diff)).toBe(1);
    expect(out(diff)).toMatch(/patch\/patch\.diff: a fifo, not a regular file/);
    await rm(path.join(dir, 'patch', 'patch.json'));
    await symlink('/dev/zero', path.join(dir, 'patch', 'patch.json'));
    const apply = await timed(['runs', 'apply', '--artifact-root', root, id, '--yes']);
    expectFinished({ apply });
    expect(apply.exitCode, out(apply)).toBe(1);
    expect(out(apply)).toMatch(/patch\/patch\.json: a symbolic link/);
  });
});
