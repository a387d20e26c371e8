// Adversarial round 3, class 9 (code the sandbox plants for the host): the host must not
// later run or obey anything the sandbox wrote. The host tool here is git, the operator's
// own, run in the workspace after the run as the operator would (`git status`); what the
// sandbox plants is `core.fsmonitor`, a command git runs on every status. The oracle is a
// marker file the planted command makes on the host. Routes: an rw workspace written by the
// command itself, a repository whose `.git` is a file pointing at a bare repository beside
// it (`gitdir: ./.bare`, the bare-repository-and-worktrees layout), and a draft applied with
// `cfh runs apply --yes` (the operator approves the change summary, not a hook).
import { execa } from 'execa';
import { access, chmod, chown, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, SANDBOX_UID, useScratch } from './helpers.js';
import { next } from './adv-round3-support.js';

const scratch = useScratch('adv3-planted');

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Every entry under `dir` given to the sandbox user (the workspace's owner). */
async function giveToSandbox(dir: string): Promise<void> {
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, dir]);
  else await chown(dir, process.getuid?.() ?? 0, process.getgid?.() ?? 0);
}

/** A workspace that is a git repository, `.git` a directory, or a file naming `./.bare`. */
async function repository(layout: 'dir' | 'bare'): Promise<string> {
  const ws = scratch.path(`ws-${next()}`);
  // The scratch directory is 0700: the draft copy is made as the workspace's owner.
  await chmod(path.dirname(ws), 0o711);
  await mkdir(ws);
  await writeFile(path.join(ws, 'README.md'), '# a repository\n');
  if (layout === 'dir') await execa('git', ['init', '-q', ws]);
  else {
    await execa('git', ['init', '-q', '--bare', path.join(ws, '.bare')]);
    await execa('git', ['config', '-f', path.join(ws, '.bare', 'config'), 'core.bare', 'false']);
    await writeFile(path.join(ws, '.git'), 'gitdir: ./.bare\n');
  }
  await giveToSandbox(ws);
  return ws;
}

/** The operator's `git status` in the workspace, after the run. */
async function hostGitStatus(ws: string): Promise<void> {
  await execa('git', ['-c', 'safe.directory=*', 'status'], { cwd: ws, reject: false });
}

/** The sandbox's command: appends a core.fsmonitor that touches `marker` to `config`. */
function plant(config: string, marker: string): string[] {
  return ['sh', '-c', `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n' >> ${config}`];
}

describe('class 9: the sandbox plants a git setting the host obeys', () => {
  it('an rw run does not leave the host a .git/config that runs a command on git status', async () => {
    const ws = await repository('dir');
    const marker = scratch.path(`marker-${next()}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path(`art-${next()}`),
      '--',
      ...plant('/workspace/.git/config', marker),
    ]);
    expect([0, 1, 2, 125]).toContain(r.exitCode);
    await hostGitStatus(ws);
    expect(await exists(marker)).toBe(false);
  });

  it('an rw run does not leave the host a gitdir (`.git` naming ./.bare) that runs a command on git status', async () => {
    const ws = await repository('bare');
    const marker = scratch.path(`marker-${next()}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path(`art-${next()}`),
      '--',
      ...plant('/workspace/.bare/config', marker),
    ]);
    expect([0, 1, 2, 125]).toContain(r.exitCode);
    await hostGitStatus(ws);
    expect(await exists(marker)).toBe(false);
  });

  it.each(['dir', 'bare'] as const)(
    'a draft applied with runs apply --yes does not give the host a git setting that runs a command (.git %s)',
    async (layout) => {
      const ws = await repository(layout);
      const marker = scratch.path(`marker-${next()}`);
      const art = scratch.path(`art-${next()}`);
      const config = layout === 'dir' ? '/workspace/.git/config' : '/workspace/.bare/config';
      const r = await cfh([
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
        '--json',
        '--',
        ...plant(config, marker),
      ]);
      expect(r.exitCode, r.stderr).toBe(0);
      const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
      await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
      await hostGitStatus(ws);
      expect(await exists(marker)).toBe(false);
    },
  );
});
