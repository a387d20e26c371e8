// Class 9, where git looks beyond the listed names (src/host-obeyed-git.ts, the apply gate's
// git directories): variants the adversarial tests do not cover. A draft that makes a bare
// repository under an ordinary name (HEAD, objects, a config with core.fsmonitor), applied
// with --yes: the operator's git run in that directory must not obey it. An rw workspace
// whose repository includes a config file from the workspace (include.path): refused before
// anything exists, not left for the sandbox to write.
import { execa } from 'execa';
import { access, chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, SANDBOX_UID, useScratch } from './helpers.js';

const scratch = useScratch('obeyed-git');
let n = 0;

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

async function workspace(): Promise<string> {
  n += 1;
  const ws = scratch.path(`ws-${String(n)}`);
  await chmod(path.dirname(ws), 0o711);
  await mkdir(ws);
  await writeFile(path.join(ws, 'README.md'), '# a repository\n');
  await execa('git', ['init', '-q', ws]);
  return ws;
}

const own = async (ws: string): Promise<void> => {
  if (process.getuid?.() === 0) await execa('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
};

describe('class 9: git directories and included files the list does not name', () => {
  it('a draft that makes a bare repository under an ordinary name is held back from runs apply --yes', async () => {
    const ws = await workspace();
    await own(ws);
    const marker = scratch.path('marker-bare');
    const art = scratch.path('art-bare');
    const plant = [
      'set -e',
      'mkdir -p /workspace/vendor/lib/objects /workspace/vendor/lib/refs/heads',
      "printf 'ref: refs/heads/main\\n' > /workspace/vendor/lib/HEAD",
      `printf '[core]\\n\\tbare = true\\n\\tfsmonitor = "touch ${marker}; false"\\n' > /workspace/vendor/lib/config`,
      "printf 'work\\n' > /workspace/work.txt",
    ].join('; ');
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
      'sh',
      '-c',
      plant,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const apply = await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(apply.stdout + apply.stderr).toMatch(/git \(a repository directory\)/);
    // The ordinary change is written; the repository is not.
    expect(await exists(path.join(ws, 'work.txt'))).toBe(true);
    expect(await exists(path.join(ws, 'vendor', 'lib', 'config'))).toBe(false);
    await execa('git', ['-c', 'safe.directory=*', 'status'], {
      cwd: path.join(ws, 'vendor', 'lib'),
      reject: false,
    }).catch(() => undefined);
    expect(await exists(marker), 'the planted fsmonitor ran on the host').toBe(false);
  });

  it('an rw workspace whose repository includes a config file from the workspace is refused', async () => {
    const ws = await workspace();
    await writeFile(path.join(ws, 'team.gitconfig'), '[user]\n\tname = team\n');
    await execa('git', ['-C', ws, 'config', 'include.path', '../team.gitconfig']);
    await own(ws);
    const marker = scratch.path('marker-include');
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      scratch.path('art-include'),
      '--',
      'sh',
      '-c',
      `printf '[core]\\n\\tfsmonitor = "touch ${marker}; false"\\n' >> /workspace/team.gitconfig`,
    ]);
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toMatch(/team\.gitconfig.*include\.path/);
    await execa('git', ['-c', 'safe.directory=*', 'status'], { cwd: ws, reject: false });
    expect(await exists(marker)).toBe(false);
  });
});
