// Adversarial round 4, class 8 (paths a host tool obeys). `.yarnrc.yml` is on cfh's list
// because it names "the program every yarn command runs" (yarnPath); cfh holds the settings
// file but not the program it names, as it does for git's own settings (core.hooksPath,
// "Where git looks"). A repository that vendors its yarn (yarn berry's usual
// `yarnPath: .yarn/releases/yarn-X.cjs`, committed) lets the sandbox rewrite that program;
// the next `yarn` the operator runs on the host (any command: `yarn --version`) runs it.
// These tests assert cfh holds: an apply writes the named program only when the operator
// names it, and an rw run cannot change it unsaid.
import { execa } from 'execa';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, onlyRunDir, SANDBOX_UID, useScratch } from './helpers.js';

const scratch = useScratch('adv4-obeyed');
const PROGRAM = '.yarn/releases/yarn-4.5.0.cjs';
const REAL = 'console.log("the vendored yarn")\n';
const PLANTED = 'require("fs").writeFileSync("/tmp/planted-by-sandbox", "x")\n';

async function yarnRepo(name: string): Promise<string> {
  const ws = scratch.path(name);
  // The sandbox user copies a draft with its own authority: let it reach the repository.
  await chmod(path.dirname(ws), 0o755);
  await mkdir(path.join(ws, '.yarn', 'releases'), { recursive: true });
  await writeFile(path.join(ws, '.yarnrc.yml'), `yarnPath: ${PROGRAM}\n`);
  await writeFile(path.join(ws, PROGRAM), REAL);
  await writeFile(path.join(ws, 'package.json'), '{"name":"x","packageManager":"yarn@4.5.0"}\n');
  const git = (...a: string[]) => execa('git', a, { cwd: ws });
  await git('init', '-q', '.');
  await git('add', '-A');
  await git('-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init');
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

const PLANT = `printf '%s' '${PLANTED}' > /workspace/${PROGRAM}; echo hi > /workspace/README`;

describe('adv round 4: the program a held setting names', () => {
  it('runs apply --yes does not write the yarnPath program .yarnrc.yml names unless it is named', async () => {
    const ws = await yarnRepo('draft-ws');
    const art = scratch.path('draft-art');
    await mkdir(art, { recursive: true });
    const run = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace-mode',
      'draft',
      '--workspace',
      ws,
      '--artifact-root',
      art,
      '--',
      'sh',
      '-c',
      PLANT,
    ]);
    expect(run.exitCode).toBe(0);
    const runId = path.basename(await onlyRunDir(art));
    const apply = await cfh(['runs', 'apply', runId, '--artifact-root', art, '--yes']);
    expect(apply.exitCode).toBe(0);
    // The ordinary change went through (the apply itself worked).
    expect(await readFile(path.join(ws, 'README'), 'utf8')).toBe('hi\n');
    // cfh holds: the program every yarn command runs is not rewritten unnamed.
    expect(await readFile(path.join(ws, PROGRAM), 'utf8')).toBe(REAL);
  });

  it('an rw run cannot change the yarnPath program unsaid', async () => {
    const ws = await yarnRepo('rw-ws');
    const art = scratch.path('rw-art');
    await mkdir(art, { recursive: true });
    const run = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      art,
      '--',
      'sh',
      '-c',
      PLANT,
    ]);
    const changed = (await readFile(path.join(ws, PROGRAM), 'utf8')) !== REAL;
    // cfh holds when the program is read-only (unchanged), the run is refused, or the change
    // is said among the paths your tools obey.
    const said = /paths? your tools obey[^\n]*yarn/.test(run.stderr);
    expect(!changed || said).toBe(true);
  });
});
