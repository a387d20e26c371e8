// Class: a written-labels record is keyed by the tree's path (its place), not by the tree:
// after the tree is renamed on the host (a checkout moved, `git worktree move`, a CI job's
// directory renamed), a later run of it under its new path mounts it at its configured label,
// and `cfh labels` then deletes the record as that of a tree that "no longer exists".
//
// docs/operators.md, "What a run wrote stays in the tree's label": "It is matched by
// identity, as the check of two mounts of one tree is: a later mount of the tree, of a
// directory inside it, or of one holding it, under any path, joins the label"; "records of
// trees that no longer exist are removed first"; "Nothing a run does forgets a record": only
// `cfh labels forget` is the operator's word. A rename is neither: the tree (its inode, its
// files, the secret) is there, under another name.
//
// Second case (prune by spelling): the record keeps the path the tree was last mounted from
// (`host`) and `cfh labels` prunes a record when that path is gone, not when its place is:
// a run through a bind-mount alias of the tree, the alias later unmounted and removed, and
// the operator's `cfh labels` forgets what was written into a tree that is still there.
import { execFileSync } from 'node:child_process';
import { mkdir, rename, rmdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { cfh, useScratch } from './helpers.js';
import {
  TOKEN,
  profile,
  script,
  scriptedRun,
  secretDir,
  stateEnv,
  transcriptText,
} from './adv-round5-support.js';

const scratch = useScratch('adv5-rename');

describe('adv round 5: a written tree renamed', () => {
  it('the secret a deploy run wrote is not read under the configured label once the tree is renamed', async () => {
    const env = stateEnv(scratch, 'rename');
    const workspace = await scratch.sampleRepo();
    const secrets = await secretDir(scratch, { token: TOKEN });
    const deploy = await profile(scratch, {
      tools: ['read_file', 'write_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const a = await scriptedRun(scratch, {
      profile: deploy,
      script: await script(scratch, [
        [{ name: 'read_file', input: { path: '/secrets/token' } }],
        [{ name: 'write_file', input: { path: '.env', content: 'TOKEN={{handle:1}}\n' } }],
      ]),
      workspace,
      env,
    });
    expect(a.r.exitCode, a.r.stderr).toBe(0);

    const moved = `${workspace}-moved`;
    await rename(workspace, moved);
    // The operator lists the records (which prunes "trees that no longer exist").
    const listed = await cfh(['labels', '--json'], { env });
    expect(listed.exitCode, listed.stderr).toBe(0);

    const everyday = await profile(scratch, {
      tools: ['read_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const later = await scriptedRun(scratch, {
      profile: everyday,
      script: await script(scratch, [[{ name: 'read_file', input: { path: '.env' } }]]),
      workspace: moved,
      env,
    });
    expect(later.r.exitCode, later.r.stderr).toBe(0);
    // Secure: the same tree under another name still holds the secret's label.
    expect(await transcriptText(later.dir)).not.toContain(TOKEN);
  });

  it.runIf(process.getuid?.() === 0)(
    'cfh labels does not prune the record of a tree written through an alias that is gone',
    async () => {
      const env = stateEnv(scratch, 'alias');
      const workspace = await scratch.sampleRepo();
      const alias = scratch.path('alias');
      await mkdir(alias);
      execFileSync('mount', ['--bind', workspace, alias]);
      let mounted = true;
      try {
        const secrets = await secretDir(scratch, { token: TOKEN });
        const deploy = await profile(scratch, {
          tools: ['read_file', 'write_file'],
          workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
          mounts: [
            {
              source: secrets,
              target: '/secrets',
              mode: 'ro',
              label: { confidentiality: ['secret'] },
            },
          ],
          cfc: { mode: 'enforce-explicit', modelClearance: [] },
        });
        const a = await scriptedRun(scratch, {
          profile: deploy,
          script: await script(scratch, [
            [{ name: 'read_file', input: { path: '/secrets/token' } }],
            [{ name: 'write_file', input: { path: '.env', content: 'TOKEN={{handle:1}}\n' } }],
          ]),
          workspace: alias,
          env,
        });
        expect(a.r.exitCode, a.r.stderr).toBe(0);
        execFileSync('umount', [alias]);
        mounted = false;
        await rmdir(alias);
        const listed = await cfh(['labels', '--json'], { env });
        expect(listed.exitCode, listed.stderr).toBe(0);
        const everyday = await profile(scratch, {
          tools: ['read_file'],
          workspace: { mode: 'rw', label: { integrity: ['repo'] } },
          cfc: { mode: 'enforce-explicit', modelClearance: [] },
        });
        const later = await scriptedRun(scratch, {
          profile: everyday,
          script: await script(scratch, [[{ name: 'read_file', input: { path: '.env' } }]]),
          workspace,
          env,
        });
        expect(later.r.exitCode, later.r.stderr).toBe(0);
        // Secure: the tree is where it was; what was written into it keeps its label.
        expect(await transcriptText(later.dir)).not.toContain(TOKEN);
      } finally {
        if (mounted) execFileSync('umount', [alias]);
      }
    },
  );
});
