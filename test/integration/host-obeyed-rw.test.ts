// Class 9 of the security round: the sandbox must not plant code the host runs later. Under
// an rw workspace the repository's own code, running in the sandbox, wrote
// `.git/hooks/post-checkout` into the host checkout and the next `git checkout` on the host
// ran it (as root). Each route here is tried by a sandboxed command against a real git
// checkout; afterwards the host's own git runs in it (`status`, `checkout`) and a marker file
// outside the workspace says whether anything the sandbox planted ran. The host-obeyed paths
// at the top of every rw mount are mounted read-only (src/host-obeyed.ts,
// src/sandbox/host-obeyed-mounts.ts); what cannot be held read-only without leaving
// something in the host workspace (a `.git` where there was none) is found at the end of
// the run and said in the end line and the evidence.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  SANDBOX_UID,
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  useScratch,
} from './helpers.js';

const scratch = useScratch('host-obeyed-rw');
const isRoot = process.getuid?.() === 0;
let made = 0;

/** The host's git, as an operator runs it in a checkout the sandbox user owns. */
function hostGit(cwd: string, ...args: string[]): void {
  try {
    execFileSync('git', ['-c', 'safe.directory=*', ...args], { cwd, stdio: 'ignore' });
  } catch {
    // A planted config may make git fail; what matters is whether it ran anything.
  }
}

/**
 * A git checkout with one commit and a fresh marker directory. Owned by the sandbox user
 * (as root: SANDBOX_UID), or by root with `asRoot`: under runsc a source another user could
 * replace is refused (mount_source_swappable), and the workspace owner can replace entries
 * of the workspace, so the runsc runs use a root-owned checkout and `--user 0`.
 */
async function checkout(asRoot = false): Promise<{ repo: string; markers: string }> {
  made += 1;
  const repo = scratch.path(`repo-${made}`);
  const markers = scratch.path(`markers-${made}`);
  await mkdir(repo, { recursive: true });
  await mkdir(markers);
  await chmod(markers, 0o777);
  const git = (...a: string[]) => execFileSync('git', a, { cwd: repo, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'README'), 'a repository\n');
  git('add', 'README');
  git('-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'init');
  if (isRoot && !asRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
  return { repo, markers };
}

/** Whatever the sandbox managed, the host's git is then used as an operator would. */
function hostUses(repo: string): void {
  hostGit(repo, 'status');
  hostGit(repo, 'checkout', '-q', '-b', 'after-the-run');
  hostGit(repo, 'checkout', '-q', 'main');
}

const markersIn = async (dir: string): Promise<string[]> =>
  (await import('node:fs/promises')).readdir(dir);

/** A planted git directory's config: every host git command in it runs the marker. */
const plantedConfig = (marker: string) =>
  `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch ${marker}; false"\n`;

/** The planting routes, each a shell script the sandbox runs in /workspace. */
const ROUTES: readonly { name: string; script: (markers: string) => string }[] = [
  {
    name: 'a hook file (.git/hooks/post-checkout)',
    script: (m) =>
      `printf '#!/bin/sh\\ntouch ${m}/hook\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`,
  },
  {
    name: 'core.fsmonitor in .git/config',
    script: (m) =>
      `printf '[core]\\n\\tfsmonitor = "touch ${m}/fsmonitor; false"\\n' >> .git/config`,
  },
  {
    name: 'core.hooksPath into the worktree',
    script: (m) =>
      [
        'mkdir -p planted-hooks',
        `printf '#!/bin/sh\\ntouch ${m}/hooks-path\\n' > planted-hooks/post-checkout`,
        'chmod +x planted-hooks/post-checkout',
        `printf '[core]\\n\\thooksPath = planted-hooks\\n' >> .git/config`,
      ].join(' && '),
  },
  {
    name: 'the .git directory replaced by a planted one',
    script: (m) =>
      [
        'mv .git .git-moved',
        'cp -a .git-moved .git',
        `printf '${plantedConfig(`${m}/replaced`).replaceAll('\n', '\\n').replaceAll('\t', '\\t')}' > .git/config`,
      ].join(' && '),
  },
];

async function commandRun(
  repo: string,
  root: string,
  script: string,
  extra: readonly string[] = [],
): Promise<{ exitCode: number; stdout: string; stderr: string; dir: string }> {
  const r = await cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--workspace',
    repo,
    '--artifact-root',
    root,
    ...extra,
    '--',
    'sh',
    '-c',
    script,
  ]);
  return { ...r, dir: await onlyRunDir(root) };
}

/** Each runtime, as the checkout it can run on (see checkout). */
const RUNTIMES = [
  { runtime: 'runc', asRoot: false, args: ['--runtime', 'runc'] },
  {
    runtime: 'runsc',
    asRoot: isRoot,
    args: ['--runtime', 'runsc', ...(isRoot ? ['--user', '0'] : [])],
  },
] as const;

describe('class 9: a file the host will execute or obey later (rw workspace)', () => {
  for (const { runtime, asRoot, args } of RUNTIMES) {
    for (const route of ROUTES) {
      it(`${runtime}: ${route.name} planted by the sandbox runs nothing on the host afterwards`, async () => {
        const { repo, markers } = await checkout(asRoot);
        const root = scratch.path(`art-${made}`);
        const r = await commandRun(repo, root, route.script(markers), args);
        hostUses(repo);
        expect(await markersIn(markers)).toEqual([]);
        // The command failed (a read-only file system, or busy: a mount point); the run ended.
        expect(r.stderr).toMatch(/cfh: run \S+ completed \(exit [1-9]\d*\)/);
        // The mount table the evidence keeps says what the container got.
        const snapshot = await readJson<{
          containerSpec: { mounts: { source: string; target: string; mode: string }[] };
          hostObeyed: { mode: string; readOnly: string[] };
        }>(path.join(r.dir, 'snapshot.json'));
        expect(snapshot.containerSpec.mounts).toContainEqual(
          expect.objectContaining({
            source: path.join(repo, '.git'),
            target: '/workspace/.git',
            mode: 'ro',
          }),
        );
        expect(snapshot.hostObeyed).toMatchObject({ mode: 'ro', readOnly: ['/workspace/.git'] });
      });
    }

    it(`${runtime}: a worktree's .git file rewritten to point at a planted directory runs nothing on the host`, async () => {
      const { repo, markers } = await checkout(asRoot);
      const wt = scratch.path(`worktree-${made}`);
      execFileSync('git', ['-c', 'safe.directory=*', 'worktree', 'add', '-q', wt], { cwd: repo });
      if (isRoot && !asRoot)
        execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, wt, repo]);
      const planted = [
        'mkdir -p planted/objects planted/refs/heads',
        "printf 'ref: refs/heads/main\\n' > planted/HEAD",
        `printf '${plantedConfig(`${markers}/pointer`).replaceAll('\n', '\\n').replaceAll('\t', '\\t')}' > planted/config`,
        // Unlinked and written again, or written over: either is the pointer rewritten.
        "{ rm -f .git; printf 'gitdir: planted\\n' > .git; }",
      ].join(' && ');
      const root = scratch.path(`art-wt-${made}`);
      const r = await commandRun(wt, root, planted, args);
      hostUses(wt);
      expect(await markersIn(markers)).toEqual([]);
      expect(await readFile(path.join(wt, '.git'), 'utf8')).toMatch(/^gitdir: .*worktrees/);
      expect(r.stderr).toMatch(/completed \(exit [1-9]\d*\)/);
    });
  }

  it('a new .git where the workspace had none (a subdirectory of a repository) is said in the end line and the evidence', async () => {
    const { repo, markers } = await checkout();
    const sub = path.join(repo, 'pkg');
    await mkdir(sub);
    await writeFile(path.join(sub, 'index.js'), '1;\n');
    if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, sub]);
    const script = [
      'mkdir -p .git/objects .git/refs/heads',
      "printf 'ref: refs/heads/main\\n' > .git/HEAD",
      `printf '${plantedConfig(`${markers}/new`).replaceAll('\n', '\\n').replaceAll('\t', '\\t')}' > .git/config`,
      "mkdir deep && printf 'export X=1\\n' > deep/.envrc",
      "printf 'ordinary\\n' > ordinary.txt",
    ].join(' && ');
    const root = scratch.path(`art-new-${made}`);
    const r = await commandRun(sub, root, script);
    // Nothing can be held read-only where nothing was, without leaving a mount point in
    // the host workspace: the run completes, and says loudly what the sandbox planted.
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /WARNING: the sandbox created or changed 2 paths your tools obey \(\.git, deep\/\.envrc\)/,
    );
    const events = await readEvents(r.dir);
    const found = events.find((e) => e.type === 'host_obeyed_changed')?.data as
      { paths: { path: string }[]; count: number } | undefined;
    expect(found?.paths.map((p) => p.path)).toEqual(['.git', 'deep/.envrc']);
    const report = await readJson<{ hostObeyed?: { changed: number } }>(
      path.join(r.dir, 'report.json'),
    );
    expect(report.hostObeyed?.changed).toBe(2);
    const audit = await cfh(['audit', r.dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
    // What the warning is about: the host's git in that directory would obey it.
    expect(existsSync(path.join(sub, '.git', 'config'))).toBe(true);
    expect(await markersIn(markers)).toEqual([]);
  });

  it("a submodule checkout's .git file rewritten below the top is said in the end line and the evidence", async () => {
    const { repo: other } = await checkout(true);
    const { repo } = await checkout();
    const git = (...a: string[]) =>
      execFileSync('git', ['-c', 'safe.directory=*', '-c', 'protocol.file.allow=always', ...a], {
        cwd: repo,
        stdio: 'ignore',
      });
    git('submodule', 'add', '-q', other, 'sub');
    if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
    expect(await readFile(path.join(repo, 'sub', '.git'), 'utf8')).toMatch(/^gitdir: /);
    const root = scratch.path(`art-sub-${made}`);
    const r = await commandRun(repo, root, "printf 'gitdir: ../planted\n' > sub/.git");
    expect(r.exitCode, r.stderr).toBe(0);
    // The superproject's .git (with .git/modules/sub) was held; the pointer below the top
    // cannot be, and is named.
    expect(r.stderr).toMatch(
      /WARNING: the sandbox created or changed 1 path your tools obey \(sub\/\.git\)/,
    );
    const snapshot = await readJson<{ hostObeyed: { readOnly: string[] } }>(
      path.join(r.dir, 'snapshot.json'),
    );
    expect(snapshot.hostObeyed.readOnly).toEqual(['/workspace/.git', '/workspace/.gitmodules']);
  });

  it('--host-obeyed rw names the metadata writable: recorded in the snapshot, nothing mounted over it', async () => {
    const { repo } = await checkout();
    const root = scratch.path(`art-rw-${made}`);
    const r = await commandRun(repo, root, 'printf x > .git/cfh-written', ['--host-obeyed', 'rw']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await readFile(path.join(repo, '.git', 'cfh-written'), 'utf8')).toBe('x');
    const snapshot = await readJson<{
      containerSpec: { mounts: { target: string }[] };
      hostObeyed: { mode: string; readOnly: string[] };
      profile: { overrides: Record<string, string> };
    }>(path.join(r.dir, 'snapshot.json'));
    expect(snapshot.hostObeyed).toMatchObject({ mode: 'rw', readOnly: [] });
    expect(snapshot.profile.overrides['host-obeyed']).toBe('rw');
    expect(snapshot.containerSpec.mounts.map((m) => m.target)).toEqual([
      '/workspace',
      '/etc/hosts',
    ]);
    const show = await cfh(['runs', 'show', path.basename(r.dir), '--artifact-root', root]);
    expect(show.stdout).toMatch(/^host-obeyed rw: the sandbox may write them/m);
  });
});

const AGENT_CASES = RUNTIMES.flatMap((rt) =>
  (['per-run', 'per-call'] as const).map((lifetime) => ({ ...rt, lifetime })),
);

describe.each(AGENT_CASES)('class 9: agent runs, $runtime, $lifetime tool containers', (c) => {
  const { lifetime } = c;
  it('neither exec nor write_file plants a hook in the host checkout', async () => {
    const { repo, markers } = await checkout(c.asRoot);
    const hook = `#!/bin/sh\ntouch ${markers}/agent-hook\n`;
    const script = scratch.path(`agent-${c.runtime}-${lifetime}.json`);
    const turns = [
      {
        tool_calls: [
          {
            name: 'exec',
            input: {
              command: [
                'sh',
                '-c',
                `printf '${hook.replaceAll('\n', '\\n')}' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout`,
              ],
            },
          },
        ],
      },
      {
        tool_calls: [
          { name: 'write_file', input: { path: '.git/hooks/pre-commit', content: hook } },
        ],
      },
      { text: 'done' },
    ];
    await writeFile(script, JSON.stringify({ turns }));
    const root = scratch.path(`art-agent-${c.runtime}-${lifetime}`);
    const run = { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script };
    const r = await cfh(agentRunArgs(run, ['--tool-lifetime', lifetime, ...c.args]));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(path.join(repo, '.git', 'hooks', 'post-checkout'))).toBe(false);
    expect(existsSync(path.join(repo, '.git', 'hooks', 'pre-commit'))).toBe(false);
    hostUses(repo);
    expect(await markersIn(markers)).toEqual([]);
  });
});
