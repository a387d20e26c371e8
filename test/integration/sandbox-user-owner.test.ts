// Who owns the workspace and who the sandbox runs as, through the real CLI and engine
// (AH-INV-4, governance extension "Draft vs commit policy"): a root-owned checkout that
// the sandbox user (nobody) cannot write is refused before anything exists, with the
// fixes; the kernel's own answer (ACLs included) is what the sandbox meets inside; draft
// mode works on the same checkout because the copy is the sandbox user's.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CFH_MAIN,
  baseEnv,
  cfh,
  objectsOwnedBy,
  onlyRunDir,
  readJson,
  runIdOf,
  startCfh,
  useScratch,
  waitForEvent,
} from './helpers.js';

const scratch = useScratch('owner');
const isRoot = process.getuid?.() === 0;
const hasPython = spawnSync('python3', ['-c', 'import os; os.setxattr']).status === 0;
const TESTER = 'cfh-tester';
const hasTester = spawnSync('id', ['-u', TESTER]).status === 0;

let n = 0;
/** A checkout as root leaves it: root's, mode 755, files 644, under a searchable parent. */
async function rootCheckout(): Promise<string> {
  n += 1;
  const ws = scratch.path(`checkout-${n}`);
  await chmod(path.dirname(ws), 0o755);
  await mkdir(path.join(ws, 'src'), { recursive: true, mode: 0o755 });
  await chmod(ws, 0o755);
  await writeFile(path.join(ws, 'README'), 'hello\n');
  await writeFile(path.join(ws, 'src', 'a.txt'), 'a\n');
  return ws;
}

function run(ws: string, art: string, extra: string[], command: string[]) {
  return cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--workspace',
    ws,
    '--artifact-root',
    art,
    ...extra,
    '--',
    ...command,
  ]);
}

async function runDirs(art: string): Promise<string[]> {
  return existsSync(art) ? (await readdir(art)).filter((e) => /^\d{8}T/.test(e)) : [];
}

describe.runIf(isRoot)('an rw workspace the sandbox user cannot write', () => {
  it('is refused before anything exists: 125, one line, owner, mode and the fixes', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    const r = await run(ws, art, [], ['sh', '-c', 'touch made; id -u']);
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toBe(
      `cfh: the sandbox user 65534:65534 cannot write ${ws} (owned by 0:0, mode 755); run with --user 0 (explicit root), chown it to 65534:65534, or --workspace-mode draft\n`,
    );
    expect(r.stdout).toBe('');
    expect(await runDirs(art)).toEqual([]);
    expect(await objectsOwnedBy(r.pid)).toEqual([]);
    expect(existsSync(path.join(ws, 'made'))).toBe(false);
  });

  it('an rw --mount too, named by its target, under the read-only default profile', async () => {
    const ws = await rootCheckout();
    const out = scratch.path(`out-${n}`);
    await mkdir(out, { mode: 0o755 });
    const art = scratch.path(`art-${n}`);
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      ws,
      '--mount',
      `${out}:/out:rw`,
      '--artifact-root',
      art,
      '--',
      'true',
    ]);
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toContain(`cannot write ${out} (mounted rw at /out) (owned by 0:0, mode 755)`);
    expect(r.stderr).not.toContain('draft');
    expect(await runDirs(art)).toEqual([]);
  });

  it('a read-only file system under the checkout is named as such', async () => {
    const ws = await rootCheckout();
    await chown(ws, 65534, 65534);
    const art = scratch.path(`art-${n}`);
    // A private mount namespace: the bind is cfh's alone, the refusal comes before the engine.
    const r = await execa(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount --bind -o ro "$1" "$1" && shift && exec "$@"',
        'sh',
        ws,
        process.execPath,
        CFH_MAIN,
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--',
        'true',
      ],
      { reject: false, env: baseEnv(), extendEnv: false },
    );
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toContain(
      `cfh: the sandbox user 65534:65534 cannot write ${ws}: it is on a read-only file system`,
    );
  });

  it.runIf(hasPython)(
    'an ACL entry granting nobody is the kernel’s yes, and writes succeed inside',
    async () => {
      const ws = await rootCheckout();
      // user::rwx, user:65534:rwx, group::r-x, mask::rwx, other::r-x (mode stays 775-ish).
      const acl = [
        [0x01, 7, 0xffffffff],
        [0x02, 7, 65534],
        [0x04, 5, 0xffffffff],
        [0x10, 7, 0xffffffff],
        [0x20, 5, 0xffffffff],
      ];
      execFileSync('python3', [
        '-c',
        "import os,struct,sys,json\nes=json.loads(sys.argv[2])\nos.setxattr(sys.argv[1],'system.posix_acl_access',struct.pack('<I',2)+b''.join(struct.pack('<HHI',*e) for e in es))",
        ws,
        JSON.stringify(acl),
      ]);
      const art = scratch.path(`art-${n}`);
      const r = await run(ws, art, [], ['sh', '-c', 'echo inside > made.txt && id -u']);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('65534');
      expect(await readFile(path.join(ws, 'made.txt'), 'utf8')).toBe('inside\n');
      expect((await stat(path.join(ws, 'made.txt'))).uid).toBe(65534);
    },
  );

  it('draft mode on the same checkout: writes work, runs diff shows them, the copy is gone', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    const r = await run(
      ws,
      art,
      ['--workspace-mode', 'draft'],
      ['sh', '-c', 'echo changed >> README && echo new > src/b.txt && id -u && stat -c %u .'],
    );
    expect(r.exitCode, r.stderr).toBe(0);
    // The copy is the sandbox user's: nobody writes it.
    expect(r.stdout.split('\n').slice(0, 2)).toEqual(['65534', '65534']);
    expect(await readFile(path.join(ws, 'README'), 'utf8')).toBe('hello\n');
    expect(existsSync(path.join(ws, 'src', 'b.txt'))).toBe(false);
    const dir = await onlyRunDir(art);
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(snapshot.sandboxUser).toEqual({ user: '65534:65534', reason: 'nobody' });
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    const diff = await cfh(['runs', 'diff', runIdOf(dir), '--artifact-root', art]);
    expect(diff.exitCode, diff.stderr).toBe(0);
    expect(diff.stdout).toContain('+changed');
    expect(diff.stdout).toContain('+new');
    expect(diff.stdout).toContain('src/b.txt');
  });
});

describe.runIf(isRoot && hasTester)('cfh as an ordinary user on a root-owned checkout', () => {
  it('is refused at planning too: the sandbox is that user, who cannot write it', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    const uid = Number(execFileSync('id', ['-u', TESTER], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', TESTER], { encoding: 'utf8' }));
    // Evidence the tester may write: only the workspace stands in the way.
    await mkdir(art);
    await chown(art, uid, gid);
    const r = await execa(
      'runuser',
      [
        '-u',
        TESTER,
        '--',
        process.execPath,
        CFH_MAIN,
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--',
        'true',
      ],
      // Its state directory is its own: the suite's is root's.
      {
        reject: false,
        env: { ...baseEnv({ CFH_STATE_DIR: path.join(art, 'state') }), HOME: '/tmp' },
        extendEnv: false,
      },
    );
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toContain(
      `cfh: the sandbox user ${uid}:${gid} cannot write ${ws} (owned by 0:0, mode 755); run with --user 0 (explicit root), chown it to ${uid}:${gid}, or --workspace-mode draft`,
    );
  });
});

describe.runIf(isRoot)('--user UID[:GID]', () => {
  it('--user 0 is explicit root: it writes a root checkout, recorded, caps still dropped', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    const r = await run(
      ws,
      art,
      ['--user', '0'],
      ['sh', '-c', 'echo root > made.txt && id -u && id -g && grep CapEff /proc/self/status'],
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('0\n0\nCapEff:\t0000000000000000\n');
    expect((await stat(path.join(ws, 'made.txt'))).uid).toBe(0);
    const dir = await onlyRunDir(art);
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(snapshot.sandboxUser).toEqual({ user: '0:0', reason: 'flag' });
    expect(snapshot.containerSpec).toMatchObject({
      user: '0:0',
      capDrop: ['ALL'],
      capAdd: [],
      noNewPrivileges: true,
    });
    expect(snapshot.assurance.level).toBe('reduced');
    expect(snapshot.assurance.reasons).toContainEqual({
      code: 'root-user',
      detail: expect.stringContaining('as asked explicitly with --user'),
    });
    // The audit accepts uid 0 that --user asked for: the hardening check passes.
    const audit = await cfh(['audit', dir, '--json']);
    const checks = (JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] })
      .checks;
    const hardening = checks.filter((c) => c.verdict === 'fail');
    expect(hardening, audit.stdout).toEqual([]);
  });

  it('refuses every spelling of uid 0 but 0 itself, before anything exists', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    for (const spelling of ['00', '-0', '0x0', 'root', '4294967296', '0:00', '']) {
      const r = await run(ws, art, ['--user', spelling], ['id', '-u']);
      expect(r.exitCode, spelling).toBe(125);
      expect(r.stderr, spelling).toMatch(/^cfh: --user: '.*' is not UID\[:GID\] in decimal/);
      expect(r.stdout).toBe('');
    }
    expect(await runDirs(art)).toEqual([]);
  });

  it('--user UID: the group defaults to the same number; the owner it names can write', async () => {
    const ws = await rootCheckout();
    await chown(ws, 4321, 4321);
    const art = scratch.path(`art-${n}`);
    const r = await run(ws, art, ['--user', '4321'], ['sh', '-c', 'touch made && id -u && id -g']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('4321\n4321\n');
    // --user 0 on a checkout another user owns: root without DAC override cannot write it.
    const denied = await run(ws, scratch.path(`art-${n}-0`), ['--user', '0'], ['true']);
    expect(denied.exitCode).toBe(125);
    expect(denied.stderr).toContain(
      `cfh: the sandbox user 0:0 cannot write ${ws} (owned by 4321:4321, mode 755); run with --user 4321:4321 (its owner)`,
    );
  });

  it('an agent run takes --user too, and is refused the same way', async () => {
    const repo = await scratch.sampleRepo();
    const art = scratch.path(`art-agent-${n}`);
    const base = [
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--prompt',
      'p',
    ];
    const refused = await cfh([...base, '--user', '0']);
    expect(refused.exitCode, refused.stderr).toBe(125);
    expect(refused.stderr).toContain('cfh: the sandbox user 0:0 cannot write');
    expect(await runDirs(art)).toEqual([]);
    const r = await cfh([...base, '--user', '4321:4321']);
    expect(r.exitCode, r.stderr).toBe(0);
    const snapshot = await readJson<any>(path.join(await onlyRunDir(art), 'snapshot.json'));
    expect(snapshot.sandboxUser).toEqual({ user: '4321:4321', reason: 'flag' });
    expect(snapshot.containerSpec.user).toBe('4321:4321');
  });

  it('draft with --user: the copy is that user’s, and the reaper removes it as its owner after SIGKILL', async () => {
    const ws = await rootCheckout();
    const art = scratch.path(`art-${n}`);
    // A draft root of this test's own: another cfh's sweep of the shared temp directory
    // would also remove a copy whose cfh is gone, and race the reap asserted here.
    const drafts = scratch.path(`drafts-${n}`);
    await mkdir(drafts, { mode: 0o700 });
    const env = { CFH_DRAFT_ROOT: drafts };
    const child = startCfh(
      [
        'sandbox',
        'run',
        '--profile',
        'untrusted-repo',
        '--workspace',
        ws,
        '--workspace-mode',
        'draft',
        '--user',
        '4321',
        '--artifact-root',
        art,
        '--',
        'sh',
        '-c',
        // What the sandbox leaves to make removal hard: a locked directory with a file in it.
        'mkdir -p locked && echo x > locked/f && chmod 000 locked; sleep 60',
      ],
      { env },
    );
    const dir = await waitForEvent(art, 'container_started');
    const runId = runIdOf(dir);
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(snapshot.sandboxUser).toEqual({ user: '4321:4321', reason: 'flag' });
    const copy = snapshot.workspace.draft.source as string;
    // The copy (not the host checkout) is the sandbox user's.
    expect((await stat(copy)).uid).toBe(4321);
    expect((await stat(ws)).uid).toBe(0);
    await waitFor(() => existsSync(path.join(copy, 'locked')));
    child.kill('SIGKILL');
    await child.catch(() => undefined);
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(true);
    const reaped = await cfh(['reap', '--json', '--run', runId], { env });
    expect(reaped.exitCode, reaped.stderr).toBe(0);
    expect(JSON.parse(reaped.stdout)).toContainEqual(
      expect.objectContaining({ runId, kind: 'draft', action: 'removed' }),
    );
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    expect(await readdir(drafts)).toEqual([]);
  });
});

async function waitFor(ok: () => boolean, ms = 20000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}
