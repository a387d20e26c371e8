// Workspace mode draft, end to end through real containers and the real CLI (governance
// extension, "Draft vs commit policy"): the sandbox works on a copy, the host tree stays
// byte-identical, the run leaves a patch; `runs diff` prints it; `runs apply` is the
// separate, approved, atomic commit, refused when the host changed, when the evidence does
// not verify, and the second time; the copy is gone after every kind of ending.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import {
  appendFile,
  chmod,
  cp,
  mkdir,
  open,
  readFile,
  readdir,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashEvent } from '../../src/evidence/event-log.js';
import { patchableState, treeState } from '../fixtures/tree-state.js';
import {
  CFH_MAIN,
  SANDBOX_UID,
  baseEnv,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';

const scratch = useScratch('draft');
const isRoot = process.getuid?.() === 0;

/** What the sandbox does to its copy: writes, additions, deletions, binary, mode, symlink. */
const EDITS = [
  'set -e',
  'printf "changed\\n" >> notes.txt',
  'rm old.txt',
  'printf "brand new\\n" > src/added.txt',
  "printf '\\000\\001\\002\\377ELF' > data.bin",
  'chmod +x run.sh',
  'ln -s /etc/passwd escape-link',
  'mkdir -p fresh/dir && printf "deep\\n" > fresh/dir/leaf.txt',
  'rm -r gone-dir',
].join('\n');

let repos = 0;
/** A small workspace owned by the sandbox user, with a file of every kind the edits touch. */
async function workspace(): Promise<string> {
  repos += 1;
  const ws = scratch.path(`ws-${repos}`);
  // As root, runs apply writes as the workspace's owner, who must reach it.
  await chmod(path.dirname(ws), 0o755);
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await mkdir(path.join(ws, 'gone-dir'));
  await writeFile(path.join(ws, 'notes.txt'), 'first line\n');
  await writeFile(path.join(ws, 'old.txt'), 'to be removed\n');
  await writeFile(path.join(ws, 'run.sh'), '#!/bin/sh\necho run\n');
  await writeFile(path.join(ws, 'src', 'keep.c'), 'int keep;\n');
  await writeFile(path.join(ws, 'gone-dir', 'inside'), 'inside\n');
  await writeFile(path.join(ws, 'zz-last.txt'), 'last\n');
  if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

/** The end state the sandbox's edits give: the same script run on a host-side copy. */
async function expectedEndState(ws: string, script: string): Promise<Record<string, string>> {
  repos += 1;
  const copy = scratch.path(`expected-${repos}`);
  await cp(ws, copy, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  execFileSync('sh', ['-c', script], { cwd: copy });
  return patchableState(treeState(copy));
}

/** `cfh sandbox run` of `command` on a draft of `ws`, evidence under `root`. */
function draftArgs(ws: string, root: string, command: readonly string[], extra: string[] = []) {
  return [
    'sandbox',
    'run',
    '--workspace',
    ws,
    '--workspace-mode',
    'draft',
    '--artifact-root',
    root,
    ...extra,
    '--',
    ...command,
  ];
}

async function draftRun(
  ws: string,
  root: string,
  script: string,
  extra: string[] = [],
): Promise<{ exitCode: number; stderr: string; dir: string }> {
  const r = await cfh(draftArgs(ws, root, ['sh', '-c', script], extra));
  return { exitCode: r.exitCode, stderr: r.stderr, dir: await onlyRunDir(root) };
}

const apply = (root: string, runId: string, extra: string[] = []) =>
  cfh(['runs', 'apply', runId, '--artifact-root', root, ...extra]);

describe('workspace mode draft (command runs)', () => {
  it('leaves the host byte-identical, and the patch, runs diff and runs apply carry every change', async () => {
    const ws = await workspace();
    const hostBefore = treeState(ws, { owners: true });
    const expected = await expectedEndState(ws, EDITS);
    const root = scratch.path('art-main');
    // The sandbox sees a writable copy it owns, not the host tree.
    const { exitCode, stderr, dir } = await draftRun(
      ws,
      root,
      `${EDITS}\nstat -c '%u %a' /workspace; ls /workspace`,
    );
    expect(exitCode, stderr).toBe(0);
    expect(treeState(ws, { owners: true })).toEqual(hostBefore);
    const out = await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8');
    expect(out).toContain(`${isRoot ? SANDBOX_UID : process.getuid?.()} `);

    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(snapshot.workspace).toMatchObject({ hostPath: ws, mode: 'draft' });
    const draft = snapshot.workspace.draft as {
      dir: string;
      source: string;
      baseline: { sha256: string };
    };
    expect(draft.baseline.sha256).toMatch(/^[0-9a-f]{64}$/);
    // The copy: outside the host tree and the artifact root, gone with the run.
    expect(draft.source.startsWith(ws)).toBe(false);
    expect(draft.source.startsWith(root)).toBe(false);
    expect(snapshot.containerSpec.mounts[0]).toMatchObject({
      source: draft.source,
      target: '/workspace',
      mode: 'rw',
    });
    expect(existsSync(draft.dir)).toBe(false);
    const events = (await readEvents(dir)).map((e) => e.type);
    expect(events).toEqual(
      expect.arrayContaining(['draft_prepared', 'patch_written', 'draft_discarded']),
    );
    expect(events.indexOf('draft_discarded')).toBeLessThan(events.indexOf('run_finished'));

    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    const kinds = Object.fromEntries(
      (patch.changes as any[]).map((c: any) => [`${c.path}:${c.kind}`, c.applicable]),
    );
    expect(kinds).toMatchObject({
      'notes.txt:modified': true,
      'old.txt:removed': true,
      'src/added.txt:added': true,
      'data.bin:added': true,
      'run.sh:mode': true,
      'escape-link:symlink': false,
      'fresh/dir/leaf.txt:added': true,
      'gone-dir/inside:removed': true,
      'gone-dir:removed': true,
    });
    expect((patch.changes as any[]).find((c: any) => c.path === 'data.bin').binary).toBe(true);

    const diff = await cfh(['runs', 'diff', runIdOf(dir), '--artifact-root', root]);
    expect(diff.exitCode, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('+changed');
    expect(diff.stdout).toContain('deleted file mode 100644');
    expect(diff.stdout).toContain('Binary files /dev/null and b/data.bin differ');
    expect(diff.stdout).not.toContain('ELF');
    expect(diff.stdout).toContain('old mode 100644\nnew mode 100755');
    expect(diff.stdout).toMatch(
      /# not applied by cfh runs apply: symlink.*\ndiff --git a\/escape-link/,
    );

    // No terminal and no --yes: no approval, nothing applied.
    const unapproved = await apply(root, runIdOf(dir));
    expect(unapproved.exitCode, unapproved.stderr).toBe(1);
    expect(unapproved.stderr).toContain('applying needs an approval');
    expect(treeState(ws, { owners: true })).toEqual(hostBefore);

    const applied = await apply(root, runIdOf(dir), ['--yes']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('escape-link  symlink -> /etc/passwd  (not applied');
    const expectedApplied = { ...expected };
    delete expectedApplied['escape-link'];
    expect(patchableState(treeState(ws))).toEqual(expectedApplied);
    expect(existsSync(path.join(ws, 'escape-link'))).toBe(false);
    // New entries belong to the workspace's owner.
    expect(treeState(ws, { owners: true })['src/added.txt']).toContain(
      isRoot ? `${SANDBOX_UID}:${SANDBOX_UID}` : '',
    );

    const after = await readEvents(dir);
    const last = after.at(-1);
    expect(last?.type).toBe('applied');
    expect(last?.data).toMatchObject({
      approver: { surface: 'cli-flag-yes', uid: process.getuid?.() },
      hostWorkspace: ws,
    });
    const show = await cfh(['runs', 'show', runIdOf(dir), '--artifact-root', root]);
    expect(show.exitCode, show.stdout).toBe(0);
    expect(show.stdout).toMatch(
      /verified {5}integrity\.anchor: .*; patch applied to the host after the run \(seq \d+\)/,
    );
    expect(show.stdout).toMatch(
      /draft {6}host .*; patch 5 added, 1 modified, 3 removed, 1 mode, 1 not applicable; applied \(event \d+, /,
    );

    const hostApplied = treeState(ws, { owners: true });
    const twice = await apply(root, runIdOf(dir), ['--yes']);
    expect(twice.exitCode).toBe(1);
    expect(twice.stderr).toContain('its patch was applied already');
    expect(treeState(ws, { owners: true })).toEqual(hostApplied);
  });

  it('refuses to apply, changing nothing, after a host file the patch touches changed', async () => {
    const ws = await workspace();
    const root = scratch.path('art-conflict');
    const { exitCode, dir } = await draftRun(ws, root, EDITS);
    expect(exitCode).toBe(0);
    await appendFile(path.join(ws, 'notes.txt'), 'edited on the host meanwhile\n');
    const before = treeState(ws, { owners: true });
    const r = await apply(root, runIdOf(dir), ['--yes']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('the host workspace changed since the run');
    expect(r.stderr).toContain('notes.txt');
    expect(treeState(ws, { owners: true })).toEqual(before);
    // An added path that appeared on the host is refused the same way.
    await writeFile(path.join(ws, 'notes.txt'), 'first line\n');
    await writeFile(path.join(ws, 'data.bin'), 'mine');
    const r2 = await apply(root, runIdOf(dir), ['--yes']);
    expect(r2.stderr).toContain('data.bin: exists on the host now');
    expect((await readEvents(dir)).some((e) => e.type === 'applied')).toBe(false);
  });

  it('refuses a run whose evidence does not verify', async () => {
    const ws = await workspace();
    const root = scratch.path('art-tamper');
    const { dir } = await draftRun(ws, root, EDITS);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    const added = (patch.changes as any[]).find((c: any) => c.path === 'src/added.txt');
    // The new contents the apply would write, swapped after the run.
    await writeFile(path.join(dir, 'patch', 'blobs', added.after.sha256), 'planted\n');
    const before = treeState(ws, { owners: true });
    const r = await apply(root, runIdOf(dir), ['--yes']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('its evidence does not verify');
    expect(treeState(ws, { owners: true })).toEqual(before);
  });

  it.skipIf(!isRoot)(
    'a failure midway through the commit (an immutable host file) leaves the host as before',
    async () => {
      const ws = await workspace();
      const root = scratch.path('art-midway');
      // zz-last.txt sorts after every other change: the commit has replaced and removed
      // files by the time it reaches it.
      const { dir } = await draftRun(ws, root, `${EDITS}\nprintf "x\\n" >> zz-last.txt`);
      const before = treeState(ws, { owners: true });
      execFileSync('chattr', ['+i', path.join(ws, 'zz-last.txt')]);
      try {
        const r = await apply(root, runIdOf(dir), ['--yes']);
        expect(r.exitCode).toBe(1);
        expect(r.stderr).toContain('apply failed, the host workspace is as it was');
        expect(r.stderr).toContain('as it was');
      } finally {
        execFileSync('chattr', ['-i', path.join(ws, 'zz-last.txt')]);
      }
      expect(treeState(ws, { owners: true })).toEqual(before);
      expect((await readEvents(dir)).some((e) => e.type === 'applied')).toBe(false);
      // Nothing was applied, so it can be applied now.
      const again = await apply(root, runIdOf(dir), ['--yes']);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(await readFile(path.join(ws, 'zz-last.txt'), 'utf8')).toBe('last\nx\n');
    },
  );

  it.skipIf(!isRoot)(
    "as root, applies a workspace with its owner's authority: a root-owned part of it is not written",
    async () => {
      const ws = await workspace();
      // A directory of root's inside the user's workspace; the copy gave it to the sandbox.
      await mkdir(path.join(ws, 'rootdir'));
      await writeFile(path.join(ws, 'rootdir', 'f.txt'), 'root wrote this\n');
      const root = scratch.path('art-authority');
      const { dir } = await draftRun(ws, root, 'echo sandbox wrote this > rootdir/f.txt');
      const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
      expect((patch.changes as { path: string }[]).map((c) => c.path)).toEqual(['rootdir/f.txt']);
      const before = treeState(ws, { owners: true });
      const r = await apply(root, runIdOf(dir), ['--yes']);
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toContain('apply failed, the host workspace is as it was');
      expect(treeState(ws, { owners: true })).toEqual(before);
      expect(await readFile(path.join(ws, 'rootdir', 'f.txt'), 'utf8')).toBe('root wrote this\n');
    },
  );

  it.skipIf(!isRoot)(
    'the copy holds only what the sandbox user could read on the host, and a patch never writes what it did not copy',
    async () => {
      for (const owner of ['root', 'user'] as const) {
        const ws = owner === 'root' ? scratch.path(`rootws-${(repos += 1)}`) : await workspace();
        if (owner === 'root') {
          await mkdir(ws);
          await chmod(path.dirname(ws), 0o755);
        }
        // root's own secret inside the workspace: no sandbox user could read it in place.
        await writeFile(path.join(ws, 'secret'), 'root only\n', { mode: 0o600 });
        await mkdir(path.join(ws, 'private'), { mode: 0o700 });
        await writeFile(path.join(ws, 'private', 'key'), 'k\n', { mode: 0o644 });
        await writeFile(path.join(ws, 'public'), 'anyone\n', { mode: 0o644 });
        const root = scratch.path(`art-readable-${owner}`);
        const { exitCode, dir } = await draftRun(
          ws,
          root,
          'id -u; cat public; cat secret private/key 2>&1; ls -a; echo mine > secret',
        );
        expect(exitCode).toBe(0);
        const out = await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8');
        expect(out).toContain(owner === 'root' ? '65534' : String(SANDBOX_UID));
        expect(out).toContain('anyone');
        expect(out).not.toContain('root only');
        expect(out).not.toContain('k\n');
        const baseline = await readJson<any>(path.join(dir, 'workspace-baseline.json'));
        expect(baseline.skipped).toEqual(
          expect.arrayContaining([{ path: 'secret', reason: 'unreadable' }]),
        );
        // The sandbox made a file by that name in its copy: an addition apply refuses.
        const r = await apply(root, runIdOf(dir), ['--yes']);
        expect(r.exitCode).toBe(1);
        expect(r.stderr).toContain('secret: exists on the host now');
        expect(await readFile(path.join(ws, 'secret'), 'utf8')).toBe('root only\n');
      }
    },
  );

  it('discards the copy after a failed run (wall time) and still leaves its patch', async () => {
    const ws = await workspace();
    const root = scratch.path('art-timeout');
    const before = treeState(ws, { owners: true });
    const { exitCode, dir } = await draftRun(ws, root, 'echo partial > partial.txt; sleep 60', [
      '--timeout',
      '2',
    ]);
    expect(exitCode).toBe(124);
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    expect(treeState(ws, { owners: true })).toEqual(before);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    expect((patch.changes as { path: string }[]).map((c) => c.path)).toEqual(['partial.txt']);
  });

  it('a sparse 1 TiB file the sandbox makes is listed by size, never read, kept or applied', async () => {
    const ws = await workspace();
    const root = scratch.path('art-sparse');
    const { exitCode, dir } = await draftRun(
      ws,
      root,
      'truncate -s 1T huge.img && echo ok > small.txt',
    );
    expect(exitCode).toBe(0);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    const huge = (patch.changes as { path: string }[]).find((c) => c.path === 'huge.img');
    expect(huge).toMatchObject({ kind: 'added', applicable: false, after: { size: 2 ** 40 } });
    const blobs = await readdir(path.join(dir, 'patch', 'blobs'));
    expect(blobs).toHaveLength(1);
    const r = await apply(root, runIdOf(dir), ['--yes']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(path.join(ws, 'huge.img'))).toBe(false);
    expect(await readFile(path.join(ws, 'small.txt'), 'utf8')).toBe('ok\n');
  });

  it('a symlink the sandbox replaced with a directory: diff, patch and apply say and do the same', async () => {
    const ws = await workspace();
    await symlink('src', path.join(ws, 'ln'));
    if (isRoot) execFileSync('chown', ['-h', `${SANDBOX_UID}:${SANDBOX_UID}`, path.join(ws, 'ln')]);
    const root = scratch.path('art-link-dir');
    const { exitCode, dir } = await draftRun(ws, root, 'rm ln && mkdir ln && echo x > ln/f');
    expect(exitCode).toBe(0);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    expect(
      (patch.changes as { path: string; kind: string; applicable: boolean }[]).map((c) => [
        c.path,
        c.kind,
        c.applicable,
      ]),
    ).toEqual([
      ['ln', 'symlink', false],
      ['ln/f', 'added', false],
    ]);
    const text = await readFile(path.join(dir, 'patch', 'patch.diff'), 'utf8');
    const diff = await cfh(['runs', 'diff', runIdOf(dir), '--artifact-root', root]);
    for (const shown of [text, diff.stdout]) {
      expect(shown).toContain('# symlink replaced by directory: ln');
      expect(shown).not.toContain('directory removed');
    }
    const applied = await apply(root, runIdOf(dir), ['--yes']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(applied.stdout).toContain('symlink -> src replaced by directory');
    expect(lstatSync(path.join(ws, 'ln')).isSymbolicLink()).toBe(true);
    expect(existsSync(path.join(ws, 'src', 'f'))).toBe(false);
  });

  it('a patch past CFH_DRAFT_PATCH_MAX_BYTES fails the run with patch_too_large, no part of it kept', async () => {
    const ws = await workspace();
    const root = scratch.path('art-patch-bound');
    // Two new files of 600 bytes each: either alone fits the 1000-byte bound, both do not.
    const script = 'head -c 600 /dev/zero > one.bin && head -c 600 /dev/urandom > two.bin';
    const r = await cfh(draftArgs(ws, root, ['sh', '-c', script]), {
      env: { CFH_DRAFT_PATCH_MAX_BYTES: '1000' },
    });
    const dir = await onlyRunDir(root);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain('patch_too_large');
    expect(existsSync(path.join(dir, 'patch'))).toBe(false);
    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'draft_prepared')?.data.bounds).toMatchObject({
      patchMaxBytes: 1000,
    });
    expect(events.map((e) => e.type)).toContain('draft_discarded');
    const refused = await apply(root, runIdOf(dir), ['--yes']);
    expect(refused.exitCode).not.toBe(0);
    expect(existsSync(path.join(ws, 'one.bin'))).toBe(false);
  });

  it('a workspace past the copy bound (a sparse host file) is refused with 125, nothing left', async () => {
    const ws = await workspace();
    const sparse = await open(path.join(ws, 'sparse.img'), 'w');
    await sparse.truncate(64 * 1024 ** 3);
    await sparse.close();
    const root = scratch.path('art-bound');
    const drafts = scratch.path('drafts-bound');
    await mkdir(drafts, { mode: 0o700 });
    const r = await cfh(draftArgs(ws, root, ['true']), {
      env: { CFH_DRAFT_ROOT: drafts, CFH_DRAFT_MAX_BYTES: '64m' },
    });
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toContain('draft_too_large');
    expect(r.stderr).toContain('sparse.img');
    expect(await readdir(drafts)).toEqual([]);
  });

  it('removes a copy the sandbox nested past PATH_MAX; the run fails with evidence the audit reads', async () => {
    const ws = await workspace();
    const root = scratch.path('art-deep');
    const deep = [
      'import os',
      'for i in range(20):',
      "    os.mkdir('d' * 250); os.chdir('d' * 250)",
      "open('bottom', 'w').write('x')",
    ].join('\n');
    const { exitCode, dir } = await draftRun(ws, root, `python3 -c "${deep}"`);
    expect(exitCode).toBe(1);
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    const events = await readEvents(dir);
    expect(events.map((e) => e.type)).toContain('draft_discarded');
    const audit = await cfh(['audit', dir, '--json']);
    const checks = (JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] })
      .checks;
    expect(checks.find((c) => c.id === 'evidence.schema')?.verdict).not.toBe('fail');
  });

  it('after SIGKILL of cfh, `cfh reap` removes the copy with the container; a live copy is kept', async () => {
    const ws = await workspace();
    // The default draft root (the temp directory, shared): `--run` keeps reap to these runs.
    const start = (r: string) => startCfh(draftArgs(ws, r, ['sleep', '60']));
    const root = scratch.path('art-sigkill');
    const child = start(root);
    const dir = await waitForEvent(root, 'container_started');
    const runId = runIdOf(dir);
    child.kill('SIGKILL');
    await child.catch(() => undefined);
    const draftDir = (await readJson<any>(path.join(dir, 'snapshot.json'))).workspace.draft
      .dir as string;
    expect(existsSync(draftDir)).toBe(true);
    const dry = await cfh(['reap', '--dry-run', '--json', '--run', runId]);
    expect(JSON.parse(dry.stdout)).toContainEqual(
      expect.objectContaining({ runId, kind: 'draft', owner: 'gone', action: 'would-remove' }),
    );
    expect(existsSync(draftDir)).toBe(true);
    const reaped = await cfh(['reap', '--json', '--run', runId]);
    expect(reaped.exitCode, reaped.stderr).toBe(0);
    // Another cfh on this engine (a test file beside this one) sweeps an owner-gone run at its
    // start and may take it first: what reap finds it removes, and together nothing is left.
    for (const e of JSON.parse(reaped.stdout) as Record<string, unknown>[])
      expect(e, JSON.stringify(e)).toMatchObject({ runId, action: 'removed' });
    expect(existsSync(draftDir)).toBe(false);
    const after = await cfh(['reap', '--dry-run', '--json', '--run', runId]);
    expect(JSON.parse(after.stdout)).toEqual([]);
    // A live run's copy is kept.
    const liveRoot = scratch.path('art-sigkill-live');
    const live = start(liveRoot);
    const liveDir = await waitForEvent(liveRoot, 'container_started');
    const liveDraft = (await readJson<any>(path.join(liveDir, 'snapshot.json'))).workspace.draft
      .dir as string;
    const kept = await cfh(['reap', '--json', '--run', runIdOf(liveDir)]);
    expect(JSON.parse(kept.stdout)).toContainEqual(
      expect.objectContaining({ kind: 'draft', owner: 'alive', action: 'kept' }),
    );
    expect(existsSync(liveDraft)).toBe(true);
    live.kill('SIGINT');
    await live.catch(() => undefined);
    expect(existsSync(liveDraft)).toBe(false);
  });

  it('discards the copy after SIGINT', async () => {
    const ws = await workspace();
    const root = scratch.path('art-sigint');
    const before = treeState(ws, { owners: true });
    const child = startCfh(draftArgs(ws, root, ['sh', '-c', 'echo x > during.txt; sleep 60']));
    const dir = await waitForEvent(root, 'container_started');
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(existsSync(snapshot.workspace.draft.source)).toBe(true);
    child.kill('SIGINT');
    const r = await child;
    expect(r.exitCode).toBe(130);
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    expect(treeState(ws, { owners: true })).toEqual(before);
    const types = (await readEvents(dir)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['cancelled', 'draft_discarded']));
  });

  it('asks on a terminal, records a declined prompt as nothing applied and an accepted one with its surface', async () => {
    const ws = await workspace();
    const root = scratch.path('art-tty');
    const { dir } = await draftRun(ws, root, EDITS);
    const before = treeState(ws, { owners: true });
    // script(1) gives cfh a pseudo-terminal as stdin; the answer is typed into it.
    const onTerminal = (answer: string): string => {
      try {
        return execFileSync(
          'script',
          [
            '-qec',
            `${process.execPath} ${CFH_MAIN} runs apply ${runIdOf(dir)} --artifact-root ${root}`,
            '/dev/null',
          ],
          { input: `${answer}\n`, env: baseEnv(), encoding: 'utf8' },
        );
      } catch (error) {
        return String((error as { stdout?: unknown }).stdout);
      }
    };
    const declined = onTerminal('n');
    expect(declined).toContain(`Apply these changes to ${ws}? [y/N]`);
    expect(declined).toContain('not approved; nothing was applied');
    expect(treeState(ws, { owners: true })).toEqual(before);
    const accepted = onTerminal('y');
    expect(accepted).toContain('applied');
    const last = (await readEvents(dir)).at(-1);
    expect(last?.data.approver).toMatchObject({ surface: 'cli-terminal-prompt' });
    expect(await readFile(path.join(ws, 'src', 'added.txt'), 'utf8')).toBe('brand new\n');
  });

  it('counts a second applied event, or any other event after run_finished, as broken evidence', async () => {
    const ws = await workspace();
    const root = scratch.path('art-forge');
    const { dir } = await draftRun(ws, root, EDITS);
    expect((await apply(root, runIdOf(dir), ['--yes'])).exitCode).toBe(0);
    const body = await readFile(path.join(dir, 'events.jsonl'), 'utf8');
    const last = JSON.parse(body.trim().split('\n').at(-1) ?? '{}') as {
      seq: number;
      runId: string;
      hash: string;
    };
    for (const type of ['applied', 'tool_executed']) {
      // A well-chained line: only the type makes it illegitimate.
      const base = {
        seq: last.seq + 1,
        ts: new Date().toISOString(),
        runId: last.runId,
        type,
        data: {},
        prevHash: last.hash,
      };
      const forged = `${JSON.stringify({ ...base, hash: hashEvent(base) })}\n`;
      await writeFile(path.join(dir, 'events.jsonl'), body + forged);
      const show = await cfh(['runs', 'show', runIdOf(dir), '--artifact-root', root]);
      expect(show.exitCode).toBe(1);
      expect(show.stdout).toMatch(
        type === 'applied' ? /BROKEN +2 applied events/ : /BROKEN +events follow run_finished/,
      );
    }
    await writeFile(path.join(dir, 'events.jsonl'), body);
  });
});
