import { chmodSync, chownSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CfhEnvironment } from '../../src/config/env.js';
import { planSandboxRun, type SandboxRunOptions } from '../../src/engine/run/run-plan.js';
import { isRunId } from '../../src/evidence/run-id.js';
import type { OwnerIdentity } from '../../src/sandbox/owner.js';
import { NOBODY, resolveSandboxUser, type HostIdentity } from '../../src/sandbox/sandbox-user.js';
import { expectConfigError, makeTempDir, removeTempDir, workspaceMountOf } from './helpers.js';
import { testEnvironment } from './test-environment.js';

const USER: HostIdentity = { uid: 1000, gid: 1000 };
const ROOT: HostIdentity = { uid: 0, gid: 0 };
const OWNER: OwnerIdentity = { pid: 4242, start: 'boot/1', host: 'test-host' };
const isRoot = process.getuid?.() === 0;

let tmp: string | undefined;
let ws = '';
let art = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-plan-'));
  ws = path.join(tmp, 'ws');
  art = path.join(tmp, 'runs');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function dir(): string {
  if (tmp === undefined) throw new Error('temp dir not created');
  return tmp;
}

function env(artifactRoot = art): CfhEnvironment {
  return testEnvironment(path.join(artifactRoot, '..'), { artifactRoot });
}

function plan(options: Partial<SandboxRunOptions> = {}, host: HostIdentity = USER) {
  return planSandboxRun({ workspace: ws, command: ['true'], ...options }, env(), host, OWNER);
}

async function profileFile(body: string): Promise<string> {
  const file = path.join(dir(), 'profile.yaml');
  await writeFile(file, body);
  return file;
}

describe('planSandboxRun: a valid plan', () => {
  it('resolves the default profile, workspace, artifact root and spec', () => {
    const p = plan({ command: ['echo', 'hi'] });
    expect(isRunId(p.runId)).toBe(true);
    expect(p.profile.name).toBe('default');
    expect(p.profileSources).toEqual(['builtin:default']);
    expect(p.profileDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(p.overrides).toEqual({});
    expect(p.workspace).toBe(ws);
    expect(p.artifactRoot).toBe(art);
    expect(p.wallTimeMs).toBe(600_000);
    expect(p.outputBytes).toBe(8 * 1024 ** 2);
    expect(p.spec.name).toBe(`cfh-${p.runId}`);
    expect(p.spec.command).toEqual(['echo', 'hi']);
    // Network disabled: cfh's own /etc/hosts (localhost) from the run directory, last.
    expect(p.spec.mounts).toMatchObject([
      { source: ws, target: '/workspace', mode: 'ro' },
      { source: path.join(art, p.runId, 'hosts'), target: '/etc/hosts', mode: 'ro' },
    ]);
    expect(p.spec.mounts[0]?.identity?.ino).toMatch(/^\d+$/);
    expect(p.spec.labels['cfh.run-id']).toBe(p.runId);
    expect(p.spec.labels['cfh.owner-pid']).toBe('4242');
    expect(p.spec.labels['cfh.owner-host']).toBe('test-host');
  });

  it('gives the same profile digest for the same profile and a different one for another', () => {
    const a = plan();
    const b = plan();
    const c = plan({ profile: 'untrusted-repo' });
    expect(a.runId).not.toBe(b.runId);
    expect(a.profileDigest).toBe(b.profileDigest);
    expect(c.profileDigest).not.toBe(a.profileDigest);
    expect(c.spec.mounts[0]?.mode).toBe('rw');
  });

  it('records every override and applies it to the profile and spec', () => {
    const p = plan({ timeout: '30', memory: '256m', cpus: '0.5', pids: '64', runtime: 'runsc' });
    expect(p.overrides).toEqual({
      timeout: '30',
      memory: '256m',
      cpus: '0.5',
      pids: '64',
      runtime: 'runsc',
    });
    expect(p.profile.limits.wallTimeSeconds).toBe(30);
    expect(p.wallTimeMs).toBe(30_000);
    expect(p.spec.limits.memoryBytes).toBe(256 * 1024 ** 2);
    expect(p.spec.limits.memorySwapBytes).toBe(256 * 1024 ** 2);
    expect(p.spec.limits.nanoCpus).toBe(500_000_000);
    expect(p.spec.limits.pidsLimit).toBe(64);
    expect(p.spec.runtime).toBe('runsc');
  });

  it('adds --mount flags after the workspace, resolved to real paths', async () => {
    const data = path.join(dir(), 'data');
    await mkdir(data);
    const p = plan({ mounts: [`${data}:/data:rw`] });
    expect(p.spec.mounts).toMatchObject([
      { source: ws, target: '/workspace', mode: 'ro' },
      { source: data, target: '/data', mode: 'rw' },
      { target: '/etc/hosts', mode: 'ro' },
    ]);
  });

  it('refuses an rw mount that writes a read-only or draft workspace: itself or a path inside it', async () => {
    const sub = path.join(ws, 'out');
    await mkdir(sub);
    for (const mode of ['ro', 'draft'] as const) {
      const file = await profileFile(`extends: default\nworkspace:\n  mode: ${mode}\n`);
      for (const source of [ws, sub, `${ws}/./`]) {
        const error = expectConfigError(
          () => plan({ profile: file, mounts: [`${source}:/other:rw`] }),
          'mount_writes_workspace',
          `whose mode is ${mode}`,
        );
        expect(error.details).toMatchObject({ field: 'mounts' });
      }
      // Read-only, the same source is only another view.
      expect(plan({ profile: file, mounts: [`${ws}:/other:ro`] }).spec.mounts).toHaveLength(3);
    }
    // An rw workspace may be mounted twice: the mode already lets the sandbox write it.
    const rw = await profileFile('extends: default\nworkspace:\n  mode: rw\n');
    expect(plan({ profile: rw, mounts: [`${ws}:/other:rw`] }).spec.mounts).toHaveLength(3);
  });

  it("refuses a child's mount that holds or lies in a path of the runs that delegated it", async () => {
    const parentRun = path.join(dir(), 'runs', 'parent');
    const inside = path.join(parentRun, 'outputs');
    await mkdir(inside, { recursive: true });
    for (const source of [inside, parentRun, path.dirname(parentRun)])
      for (const mode of ['ro', 'rw'])
        expectConfigError(
          () => plan({ ancestors: [parentRun], mounts: [`${source}:/x:${mode}`] }),
          'mount_overlaps_parent_run',
          'a run that delegated this one',
        );
    const beside = path.join(dir(), 'beside');
    await mkdir(beside);
    expect(plan({ ancestors: [parentRun], mounts: [`${beside}:/x:rw`] }).ancestors).toEqual([
      parentRun,
    ]);
  });

  it('refuses a --mount nested in the workspace', async () => {
    const data = path.join(dir(), 'data');
    await mkdir(data);
    expectConfigError(() => plan({ mounts: [`${data}:/workspace/data`] }), 'mount_target_nested');
  });
});

describe('planSandboxRun: refusals', () => {
  it('refuses an empty command', () => {
    expectConfigError(() => plan({ command: [] }), 'command_missing', 'command');
  });

  it('refuses --memory that is not a size, naming --memory', () => {
    expectConfigError(() => plan({ memory: 'lots' }), 'invalid_size', '--memory', 'lots');
  });

  it.each(['0', 'abc', '-5', ''])('refuses --timeout %j', (timeout) => {
    expectConfigError(() => plan({ timeout }), 'invalid_number', '--timeout');
  });

  it('refuses a fractional --pids', () => {
    expectConfigError(() => plan({ pids: '1.5' }), 'invalid_number', '--pids', 'integer');
  });

  it('refuses --pids below the schema minimum, naming --pids', () => {
    expectConfigError(() => plan({ pids: '4' }), 'invalid_override', '--pids');
  });

  it('refuses --cpus above the schema maximum, naming --cpus', () => {
    expectConfigError(() => plan({ cpus: '5000' }), 'invalid_override', '--cpus');
  });

  it('refuses a --timeout above the schema maximum, naming --timeout', () => {
    expectConfigError(() => plan({ timeout: '99999999' }), 'invalid_override', '--timeout');
  });

  it('names every offending flag when two overrides are out of range', () => {
    const error = expectConfigError(
      () => plan({ cpus: '5000', pids: '4' }),
      'invalid_override',
      '--cpus',
      '--pids',
    );
    expect(error.message).not.toContain('limits.');
  });

  it('refuses --runtime kata, naming the runtime and the value', () => {
    expectConfigError(() => plan({ runtime: 'kata' }), 'invalid_override', 'runtime', 'kata');
  });

  it('refuses a workspace that does not exist', () => {
    const missing = path.join(dir(), 'missing');
    expectConfigError(() => plan({ workspace: missing }), 'workspace_missing', missing);
  });

  it('refuses a workspace that is a file', async () => {
    const file = path.join(dir(), 'file');
    await writeFile(file, 'x');
    expectConfigError(() => plan({ workspace: file }), 'workspace_not_directory');
  });

  it('refuses an artifact root inside the workspace', () => {
    expectConfigError(
      () => plan({ artifactRoot: path.join(ws, 'runs') }),
      'artifact_root_exposed',
      path.join(ws, 'runs'),
    );
  });

  it('refuses an artifact root from the environment inside the workspace', () => {
    expectConfigError(
      () =>
        planSandboxRun(
          { workspace: ws, command: ['true'] },
          env(path.join(ws, '.cfh', 'runs')),
          USER,
          OWNER,
        ),
      'artifact_root_exposed',
    );
  });

  it('the working directory as the shell spelled it: entered through a link, refused', async () => {
    // `cd proj/cache && cfh sandbox run ...`: the kernel's name for the working directory has
    // the link already followed; the shell's PWD still says how the operator got there.
    const link = path.join(dir(), 'entered');
    await symlink(process.cwd(), link);
    const through = { ...env(), workingDirectory: link };
    for (const options of [{ workspace: undefined }, { workspace: ws, mounts: ['src:/src'] }]) {
      expectConfigError(
        () => planSandboxRun({ command: ['true'], ...options }, through, USER, OWNER),
        'mount_source_link',
        `the symbolic link '${link}'`,
      );
    }
    // A PWD that names another directory is not how cfh got here: the kernel's name is used.
    const elsewhere = { ...env(), workingDirectory: ws };
    const p = planSandboxRun({ command: ['true'] }, elsewhere, USER, OWNER);
    expect(p.workspace).toBe(process.cwd());
  });

  it('refuses an artifact root reached through a link anyone but root could have made', async () => {
    // A sandbox given this directory rw, in an earlier run, could have left the link: it
    // would choose where cfh writes evidence (into the workspace, or anywhere cfh may write).
    const link = path.join(dir(), 'link');
    await symlink(ws, link);
    for (const root of [path.join(link, 'new', 'runs'), link]) {
      expectConfigError(
        () => plan({ artifactRoot: root }),
        'artifact_root_shared',
        `the symbolic link '${link}' (to '${ws}')`,
      );
    }
  });

  it('refuses a --mount of a directory inside the artifact root', async () => {
    const old = path.join(art, 'old-run');
    await mkdir(old, { recursive: true });
    expectConfigError(() => plan({ mounts: [`${old}:/old`] }), 'artifact_root_exposed');
  });

  it.runIf(isRoot)(
    'refuses an artifact root another user could replace entries of, or on the way to',
    async () => {
      // cfh writes evidence with its own authority: their directory (whatever its mode),
      // their link, or their directory where cfh would make the rest, would take it elsewhere.
      const theirs = path.join(dir(), 'theirs');
      await mkdir(path.join(theirs, 'runs'), { recursive: true });
      await mkdir(art);
      await symlink(art, path.join(theirs, 'link'));
      chownSync(theirs, 4321, 4321);
      for (const root of [
        path.join(theirs, 'runs'),
        path.join(theirs, 'not-yet', 'runs'),
        path.join(theirs, 'link'),
      ]) {
        expectConfigError(() => plan({ artifactRoot: root }), 'artifact_root_shared', 'uid 4321');
      }
      // A sticky directory is fine: nobody else may rename what cfh makes there.
      const sticky = path.join(dir(), 'sticky');
      await mkdir(sticky);
      chmodSync(sticky, 0o1777);
      expect(plan({ artifactRoot: path.join(sticky, 'new', 'runs') }).artifactRoot).toBe(
        path.join(sticky, 'new', 'runs'),
      );
      // ... unless someone else made the directory cfh would write in.
      await mkdir(path.join(sticky, 'made-by-them'));
      chownSync(path.join(sticky, 'made-by-them'), 4321, 4321);
      expectConfigError(
        () => plan({ artifactRoot: path.join(sticky, 'made-by-them', 'runs') }),
        'artifact_root_shared',
      );
    },
  );

  it('plans an allowlist posture: the workload joins its guard and uses the filtering resolver', async () => {
    const file = await profileFile(
      'extends: default\nname: egress\nnetwork:\n  mode: allowlist\n  allow: [api.example.test]\n',
    );
    const p = plan({ profile: file });
    expect(p.egress?.guard).toBe(`cfh-guard-${p.runId}`);
    expect(p.spec.networkMode).toEqual({ join: `cfh-guard-${p.runId}` });
    expect(p.spec.mounts.at(-1)).toMatchObject({ target: '/etc/resolv.conf', mode: 'ro' });
    expect(p.spec.engineRuntime).toBe('runc');
    expect(plan({ profile: file, runtime: 'runsc' }).spec.engineRuntime).toBe('runsc-host');
  });

  it('refuses an unknown tool in the profile, naming the field, the tool and the known tools', async () => {
    const file = await profileFile('extends: default\ntools: [read_file, teleport]\n');
    const error = expectConfigError(
      () => plan({ profile: file, workspace: path.join(dir(), 'missing') }),
      'unknown_tool',
      file,
      'tools:',
      "'teleport'",
      'read_file, write_file',
    );
    expect(error.details).toMatchObject({ field: 'tools', value: 'teleport' });
    expect(error.message).not.toContain('\n');
    // Every built-in tool is accepted.
    const all = await profileFile(
      'extends: default\ntools: [exec, read_file, write_file, edit_file, list_dir, grep]\n',
    );
    expect(plan({ profile: all }).profile.tools).toHaveLength(6);
  });

  it('refuses a profile with an invalid outputBytes before touching the workspace', async () => {
    const file = await profileFile('extends: default\nlimits:\n  outputBytes: huge\n');
    expectConfigError(
      () => plan({ profile: file, workspace: path.join(dir(), 'missing') }),
      'invalid_size',
      'limits.outputBytes',
    );
  });
});

describe('sandbox user', () => {
  it('runs as the invoking user when cfh is not root', () => {
    const p = plan({}, USER);
    expect(p.sandboxUser).toEqual({ user: '1000:1000', reason: 'invoking-user' });
    expect(p.spec.user).toBe('1000:1000');
  });

  it('never runs as root for `auto` when cfh is root', () => {
    const owner = statSync(ws);
    const p = plan({}, ROOT);
    if (owner.uid === 0) {
      expect(p.sandboxUser).toEqual({ user: NOBODY, reason: 'nobody' });
      expect(p.spec.user).toBe('65534:65534');
    } else {
      expect(p.sandboxUser).toEqual({
        user: `${owner.uid}:${owner.gid}`,
        reason: 'workspace-owner',
      });
    }
    expect(p.spec.user).not.toBe('0:0');
  });

  it('honours uid 0 when the profile writes it literally', async () => {
    const file = await profileFile('extends: default\nname: rooty\nuser: "0:0"\n');
    const p = plan({ profile: file }, ROOT);
    expect(p.sandboxUser).toEqual({ user: '0:0', reason: 'profile' });
    expect(p.spec.user).toBe('0:0');
    // Even when cfh is not root: a literal profile user wins.
    expect(plan({ profile: file }, USER).spec.user).toBe('0:0');
  });

  it('--user overrides the profile, is recorded, and uid 0 only as written', () => {
    const p = plan({ user: '0' }, ROOT);
    expect(p.sandboxUser).toEqual({ user: '0:0', reason: 'flag' });
    expect(p.spec.user).toBe('0:0');
    expect(p.overrides.user).toBe('0');
    expect(plan({ user: '1000:50' }, USER).spec.user).toBe('1000:50');
    expectConfigError(() => plan({ user: '00' }, ROOT), 'invalid_user', '--user');
  });

  it.runIf(isRoot)(
    'an rw workspace the sandbox user cannot write is refused before anything exists',
    () => {
      // Root-owned, for nobody: refused at planning, so no run id, directory or container.
      expectConfigError(
        () => plan({ profile: 'untrusted-repo' }, ROOT),
        'mount_not_writable',
        'cannot write',
        '--user 0 (explicit root)',
      );
      expect(plan({ profile: 'untrusted-repo', user: '0' }, ROOT).spec.user).toBe('0:0');
      // Draft: the host tree is only read; the copy is the sandbox user's.
      expect(plan({ profile: 'untrusted-repo', workspaceMode: 'draft' }, ROOT).spec.user).toBe(
        NOBODY,
      );
    },
  );

  it('resolveSandboxUser: invoking user when not root', () => {
    expect(resolveSandboxUser('auto', workspaceMountOf(ws), USER)).toEqual({
      user: '1000:1000',
      reason: 'invoking-user',
    });
    expect(resolveSandboxUser('auto', workspaceMountOf(ws), { uid: 1001, gid: 50 }).user).toBe(
      '1001:50',
    );
  });

  it('resolveSandboxUser: as root, the workspace owner, or nobody when root owns it', () => {
    const owner = statSync(ws);
    const result = resolveSandboxUser('auto', workspaceMountOf(ws), ROOT);
    if (owner.uid === 0) expect(result).toEqual({ user: NOBODY, reason: 'nobody' });
    else expect(result).toEqual({ user: `${owner.uid}:${owner.gid}`, reason: 'workspace-owner' });
  });

  it.runIf(isRoot)('resolveSandboxUser: as root, follows a chown of the workspace', () => {
    chownSync(ws, 4321, 4322);
    expect(resolveSandboxUser('auto', workspaceMountOf(ws), ROOT)).toEqual({
      user: '4321:4322',
      reason: 'workspace-owner',
    });
    chownSync(ws, 0, 0);
    expect(resolveSandboxUser('auto', workspaceMountOf(ws), ROOT)).toEqual({
      user: NOBODY,
      reason: 'nobody',
    });
  });

  it.runIf(isRoot)(
    'resolveSandboxUser: the owner of the object checked, never of what replaced it',
    async () => {
      // Checked, then the directory is moved aside and another user's put in its place:
      // asking the path who owns it would run the sandbox as that user.
      const checked = workspaceMountOf(ws);
      renameSync(ws, `${ws}.moved`);
      await mkdir(ws);
      chownSync(ws, 4321, 4321);
      try {
        expect(() => resolveSandboxUser('auto', checked, ROOT)).toThrow(
          expect.objectContaining({ code: 'mount_source_changed', boundary: 'sandbox' }),
        );
      } finally {
        rmSync(ws, { recursive: true });
        renameSync(`${ws}.moved`, ws);
      }
    },
  );

  it('resolveSandboxUser: a literal UID:GID is used as written', () => {
    expect(resolveSandboxUser('0:0', workspaceMountOf(ws), USER)).toEqual({
      user: '0:0',
      reason: 'profile',
    });
    expect(resolveSandboxUser('123:456', workspaceMountOf(ws), ROOT)).toEqual({
      user: '123:456',
      reason: 'profile',
    });
  });

  it.each(['root', '0', '1000:', ':1000', '1000:1000:1'])(
    'resolveSandboxUser: refuses %j',
    (user) => {
      expectConfigError(
        () => resolveSandboxUser(user, workspaceMountOf(ws), USER),
        'invalid_user',
        user,
      );
    },
  );
});

describe('class 9: paths a host tool obeys, in an rw workspace', () => {
  it('mounts the .git and .envrc at the top read-only over the rw workspace, named in the spec', async () => {
    await mkdir(path.join(ws, '.git'));
    await writeFile(path.join(ws, '.envrc'), 'x\n');
    const p = plan({ profile: 'untrusted-repo' });
    expect(p.hostObeyed).toMatchObject({ mode: 'ro', guarded: ['/workspace'] });
    expect(p.spec.mounts).toMatchObject([
      { source: ws, target: '/workspace', mode: 'rw' },
      { source: path.join(ws, '.envrc'), target: '/workspace/.envrc', mode: 'ro' },
      { source: path.join(ws, '.git'), target: '/workspace/.git', mode: 'ro' },
      { target: '/etc/hosts', mode: 'ro' },
    ]);
    expect(p.spec.mounts[2]?.identity?.ino).toBe(String(statSync(path.join(ws, '.git')).ino));
  });

  it('--host-obeyed rw names them writable: recorded, nothing held; a read-only or draft workspace holds nothing', async () => {
    await mkdir(path.join(ws, '.git'));
    const p = plan({ profile: 'untrusted-repo', hostObeyed: 'rw' });
    expect(p.overrides).toEqual({ 'host-obeyed': 'rw' });
    expect(p.hostObeyed).toMatchObject({ mode: 'rw', mounts: [], guarded: [] });
    expect(p.spec.mounts.map((m) => m.target)).toEqual(['/workspace', '/etc/hosts']);
    for (const workspaceMode of ['ro', 'draft'])
      expect(plan({ profile: 'untrusted-repo', workspaceMode }).hostObeyed.mounts).toEqual([]);
    expectConfigError(
      () => plan({ profile: 'untrusted-repo', hostObeyed: 'yes' }),
      'invalid_override',
      '--host-obeyed',
    );
  });

  it('the workload container withheld from a mount keeps none of the mounts nested in it', async () => {
    await mkdir(path.join(ws, '.git'));
    const { withoutMounts } = await import('../../src/tools/tool-container.js');
    const p = plan({ profile: 'untrusted-repo' });
    expect(withoutMounts(p.spec, ['/workspace']).mounts.map((m) => m.target)).toEqual([
      '/etc/hosts',
    ]);
  });
});
