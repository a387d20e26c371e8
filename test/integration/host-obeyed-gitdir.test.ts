// Class 9, a directory git treats as a repository whatever it is named, at the rw end
// (src/host-obeyed-gitdir.ts, the predicate the apply gate asks too; the draft side is
// host-obeyed-git.test.ts). An rw run writes docs/site/{HEAD,objects,refs,config}, the config
// with `worktree = ..` and core.fsmonitor: the host's `git status` in docs/site runs the
// planted command. No listed name is in the path, so the end walk must know the shape: the
// end line and `host_obeyed_changed` say it.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, readEvents, readJson, useScratch } from './helpers.js';

const scratch = useScratch('obeyed-gitdir');

describe('class 9: a directory git treats as a repository is one predicate, for the rw end walk and the apply gate', () => {
  it('an rw run that plants a repository under an ordinary name is said in the end line and host_obeyed_changed', async () => {
    const ws = scratch.path('ws');
    const markers = scratch.path('markers');
    await mkdir(ws);
    await mkdir(markers);
    await chmod(markers, 0o777);
    await chmod(path.dirname(ws), 0o711);
    await writeFile(path.join(ws, 'README.md'), 'hi\n');
    if (process.getuid?.() === 0)
      execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
    const plant = [
      'mkdir -p docs/site/objects docs/site/refs/heads',
      "printf 'ref: refs/heads/main\\n' > docs/site/HEAD",
      `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = ..\\n\\tfsmonitor = "touch ${markers}/pwned; false"\\n' > docs/site/config`,
      "printf 'page\\n' > docs/index.md",
    ].join(' && ');
    const art = scratch.path('art');
    const r = await cfh([
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
      plant,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /WARNING: the sandbox created or changed 1 path your tools obey \(docs\/site\)/,
    );
    const dir = await onlyRunDir(art);
    const events = await readEvents(dir);
    const found = events.find((e) => e.type === 'host_obeyed_changed')?.data as
      { paths: { path: string; type: string }[] } | undefined;
    expect(found?.paths).toEqual([
      expect.objectContaining({ path: 'docs/site', type: 'directory' }),
    ]);
    const report = await readJson<{ hostObeyed?: { changed: number; paths: string[] } }>(
      path.join(dir, 'report.json'),
    );
    expect(report.hostObeyed?.paths).toEqual(['docs/site']);
    // What the warning is about: the host's git in that directory obeys the planted config.
    expect(existsSync(path.join(ws, 'docs', 'site', 'config'))).toBe(true);
    expect(await readdir(markers)).toEqual([]);
  });
});
