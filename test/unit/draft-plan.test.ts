// Planning a draft run (governance extension, "Draft vs commit policy"; AH-INV-4): the
// mode from the profile or --workspace-mode, what the mediator reads (plan.workspaceMode),
// the host workspace never mounted writable, and where a draft may not live.
import { chmod, chown, mkdir, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CfhEnvironment } from '../../src/config/env.js';
import { planSandboxRun, type SandboxRunOptions } from '../../src/engine/run/run-plan.js';
import type { OwnerIdentity } from '../../src/sandbox/owner.js';
import type { HostIdentity } from '../../src/sandbox/sandbox-user.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';
import { testEnvironment } from './test-environment.js';

const OWNER: OwnerIdentity = { pid: 4242, start: 'boot/1', host: 'test-host' };
const self: HostIdentity = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = await makeTempDir('cfh-unit-draft-plan-');
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});
afterEach(async () => {
  await removeTempDir(tmp);
});

function env(extra: Partial<CfhEnvironment> = {}): CfhEnvironment {
  return testEnvironment(tmp ?? '', { artifactRoot: path.join(tmp ?? '', 'art'), ...extra });
}

const plan = (o: Partial<SandboxRunOptions> = {}, e = env(), host = self) =>
  planSandboxRun({ workspace: ws, command: ['true'], ...o }, e, host, OWNER);

describe('planning a draft run', () => {
  it('takes the mode from --workspace-mode, records the override, and never mounts the host writable', () => {
    const p = plan({ workspaceMode: 'draft' });
    expect(p.workspaceMode).toBe('draft');
    expect(p.profile.workspace.mode).toBe('draft');
    expect(p.overrides['workspace-mode']).toBe('draft');
    expect(p.draft?.root).toBe(path.resolve(os.tmpdir()));
    // Until the session mounts the copy, the plan holds the host workspace read-only.
    expect(p.spec.mounts[0]).toMatchObject({ source: ws, target: '/workspace', mode: 'ro' });
    expect(plan().workspaceMode).toBe('direct');
    // rw on this root-owned workspace: only a sandbox user who may write it (here root).
    expect(plan({ workspaceMode: 'rw', user: '0' }).workspaceMode).toBe('direct');
  });

  it('refuses an unknown mode naming the flag', () => {
    expectConfigError(
      () => plan({ workspaceMode: 'scratch' }),
      'invalid_override',
      '--workspace-mode',
    );
  });

  it('refuses a draft root inside a mount source or the artifact root', async () => {
    const inside = path.join(ws, 'drafts');
    await mkdir(inside);
    expectConfigError(
      () => plan({ workspaceMode: 'draft' }, env({ draftRoot: inside })),
      'draft_root_exposed',
      'inside',
    );
    const art = path.join(tmp ?? '', 'art');
    await mkdir(art);
    expectConfigError(
      () => plan({ workspaceMode: 'draft' }, env({ draftRoot: path.join(art) })),
      'draft_root_exposed',
      'artifact root',
    );
    expectConfigError(
      () => plan({ workspaceMode: 'draft' }, env({ draftRoot: path.join(ws, 'missing') })),
      'draft_root_missing',
    );
  });

  it('refuses a draft root another user could change entries of', async () => {
    const shared = path.join(tmp ?? '', 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    expectConfigError(
      () => plan({ workspaceMode: 'draft' }, env({ draftRoot: shared })),
      'draft_root_shared',
    );
    await chmod(shared, 0o1777);
    expect(plan({ workspaceMode: 'draft' }, env({ draftRoot: shared })).draft?.root).toBe(shared);
  });

  it.runIf(process.getuid?.() === 0)(
    'refuses a draft root named through a link another user could replace',
    async () => {
      // Their link to a root-owned directory: they would choose where root makes drafts.
      const theirs = path.join(tmp ?? '', 'theirs');
      const target = path.join(tmp ?? '', 'root-owned');
      await mkdir(theirs);
      await mkdir(target);
      await symlink(target, path.join(theirs, 'drafts'));
      await chown(theirs, 4321, 4321);
      expectConfigError(
        () => plan({ workspaceMode: 'draft' }, env({ draftRoot: path.join(theirs, 'drafts') })),
        'draft_root_shared',
        'uid 4321',
      );
      expect(plan({ workspaceMode: 'draft' }, env({ draftRoot: target })).draft?.root).toBe(target);
    },
  );

  it('refuses a draft root named through a link anyone but root could have made', async () => {
    // cfh's own link, in its own directory: a sandbox writing as cfh's user could have made it.
    const target = path.join(tmp ?? '', 'drafts-real');
    await mkdir(target);
    await chmod(target, 0o700);
    const link = path.join(tmp ?? '', 'drafts');
    await symlink(target, link);
    expectConfigError(
      () => plan({ workspaceMode: 'draft' }, env({ draftRoot: link })),
      'draft_root_shared',
      `the symbolic link '${link}'`,
    );
    expect(plan({ workspaceMode: 'draft' }, env({ draftRoot: target })).draft?.root).toBe(target);
  });

  it('refuses, when cfh is not root, a sandbox user it could not give the copy to', async () => {
    const file = path.join(tmp ?? '', 'p.yaml');
    await writeFile(
      file,
      'extends: default\nname: other\nuser: "1234:1234"\nworkspace:\n  mode: draft\n',
    );
    expectConfigError(
      () => plan({ profile: file }, env(), { uid: 1000, gid: 1000 }),
      'draft_user_unsupported',
    );
    expect(plan({ profile: file }, env(), { uid: 0, gid: 0 }).draft?.owner).toEqual({
      uid: 1234,
      gid: 1234,
    });
  });
});
