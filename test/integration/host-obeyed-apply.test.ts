// Class 9 of the security round, draft side: a file the host will execute or obey later
// reaches the host through an apply only when the operator names it on that apply. A draft
// run (and a draft session over MCP) whose sandbox changed `.git/hooks/x`, `.git/config` and
// `.envrc` has those changes held back by `cfh runs apply --yes` and by MCP's `runs_apply`
// (approved with `--approve contract:runs_apply`); the listings say which and how to apply
// them; `cfh runs apply --host-obeyed PATH` applies exactly the paths it names.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CFH_MAIN,
  REPO_ROOT,
  SANDBOX_UID,
  baseEnv,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('host-obeyed-apply');
const isRoot = process.getuid?.() === 0;
let made = 0;

/** What the sandbox writes: a hook, the repository's config, direnv's file, an ordinary file. */
const PLANT = [
  'set -e',
  "printf '#!/bin/sh\\necho planted\\n' > .git/hooks/x",
  'chmod +x .git/hooks/x',
  `printf '[core]\\n\\tfsmonitor = "touch /tmp/cfh-never; false"\\n' >> .git/config`,
  "printf 'export PLANTED=1\\n' > .envrc",
  "printf 'the work\\n' > work.txt",
].join('\n');

const HELD = ['.envrc', '.git/config', '.git/hooks/x'];

async function checkout(): Promise<string> {
  made += 1;
  const repo = scratch.path(`repo-${made}`);
  await mkdir(repo, { recursive: true });
  // As root, an apply writes as the workspace's owner, who must reach it.
  await chmod(path.dirname(repo), 0o755);
  const git = (...a: string[]) => execFileSync('git', a, { cwd: repo, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'README'), 'a repository\n');
  git('add', 'README');
  git('-c', 'user.email=t@example.invalid', '-c', 'user.name=t', 'commit', '-qm', 'init');
  if (isRoot) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, repo]);
  return repo;
}

async function draftRun(repo: string, root: string): Promise<{ stderr: string; dir: string }> {
  const r = await cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--workspace-mode',
    'draft',
    '--workspace',
    repo,
    '--artifact-root',
    root,
    '--',
    'sh',
    '-c',
    PLANT,
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return { stderr: r.stderr, dir: await onlyRunDir(root) };
}

const configOf = (repo: string) => readFile(path.join(repo, '.git', 'config'), 'utf8');

/** The one run under `root`, once its report is written. */
async function finished(root: string): Promise<string> {
  for (let i = 0; ; i += 1) {
    try {
      const dir = await onlyRunDir(root);
      await readJson(path.join(dir, 'report.json'));
      return dir;
    } catch (error) {
      if (i > 300) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('class 9: an apply writes a host-obeyed path only when it is named', () => {
  it('cfh runs apply --yes leaves out .git/hooks/x, .git/config and .envrc; the listings say how to apply them', async () => {
    const repo = await checkout();
    const config = await configOf(repo);
    const root = scratch.path(`art-${made}`);
    const { stderr, dir } = await draftRun(repo, root);
    const runId = runIdOf(dir);
    // The end line counts what an apply applies, and what it holds back.
    expect(stderr).toContain(
      `1 change waiting, 3 held back (.envrc, .git/config, .git/hooks/x: paths your tools obey; name each with --host-obeyed PATH): cfh runs diff ${runId}`,
    );
    const diff = await cfh(['runs', 'diff', runId, '--artifact-root', root]);
    expect(diff.exitCode, diff.stderr).toBe(0);
    expect(diff.stderr).toContain(
      `cfh: 3 changes held back from cfh runs apply (paths your tools obey): .envrc, .git/config, .git/hooks/x; apply them with cfh runs apply ${runId} --artifact-root ${root} --host-obeyed PATH for each`,
    );
    const json = await cfh(['runs', 'diff', runId, '--artifact-root', root, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ heldBack: HELD });
    const show = await cfh(['runs', 'show', runId, '--artifact-root', root]);
    expect(show.stdout).toMatch(
      /^draft .*; 3 held back \(\.envrc, \.git\/config, \.git\/hooks\/x\)/m,
    );
    // `--binary`, the form `git apply` takes, leaves them out too, naming them.
    const binary = await cfh(['runs', 'diff', runId, '--artifact-root', root, '--binary']);
    expect(binary.stdout).not.toContain('b/.envrc');
    expect(binary.stdout).toMatch(
      /^# not applied by cfh runs apply, left out: .*\.envrc: held back/m,
    );

    const applied = await cfh(['runs', 'apply', runId, '--artifact-root', root, '--yes']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/A {2}\.envrc .*\(held back: a path your tools obey/);
    expect(await readFile(path.join(repo, 'work.txt'), 'utf8')).toBe('the work\n');
    expect(existsSync(path.join(repo, '.envrc'))).toBe(false);
    expect(existsSync(path.join(repo, '.git', 'hooks', 'x'))).toBe(false);
    expect(await configOf(repo)).toBe(config);
    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'applied')?.data).toMatchObject({
      paths: ['work.txt'],
      heldBack: HELD,
    });
  });

  it('cfh runs apply --host-obeyed PATH applies exactly the paths named; a name of no held change is refused', async () => {
    const repo = await checkout();
    const config = await configOf(repo);
    const root = scratch.path(`art-${made}`);
    const { dir } = await draftRun(repo, root);
    const runId = runIdOf(dir);
    const wrong = await cfh([
      'runs',
      'apply',
      runId,
      '--artifact-root',
      root,
      '--yes',
      '--host-obeyed',
      'work.txt',
    ]);
    expect(wrong.exitCode).toBe(1);
    expect(wrong.stderr).toMatch(
      /^cfh: run \S+: --host-obeyed work\.txt names no held-back change/m,
    );
    expect(existsSync(path.join(repo, 'work.txt'))).toBe(false);

    const named = await cfh([
      'runs',
      'apply',
      runId,
      '--artifact-root',
      root,
      '--yes',
      '--host-obeyed',
      '.envrc',
      '--host-obeyed',
      '.git/hooks/x',
    ]);
    expect(named.exitCode, named.stderr).toBe(0);
    expect(await readFile(path.join(repo, '.envrc'), 'utf8')).toBe('export PLANTED=1\n');
    expect(existsSync(path.join(repo, '.git', 'hooks', 'x'))).toBe(true);
    expect(await configOf(repo)).toBe(config);
    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'applied')?.data).toMatchObject({
      paths: ['.envrc', '.git/hooks/x', 'work.txt'],
      heldBack: ['.git/config'],
      named: ['.envrc', '.git/hooks/x'],
    });
    const audit = await cfh(['audit', dir]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  });

  it("MCP's runs_apply, approved with contract:runs_apply, leaves them out; cfh runs apply names them after the session", async () => {
    const repo = await checkout();
    const config = await configOf(repo);
    const root = scratch.path(`art-${made}`);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        CFH_MAIN,
        'mcp',
        '--profile',
        'untrusted-repo',
        '--workspace-mode',
        'draft',
        '--workspace',
        repo,
        '--artifact-root',
        root,
        '--approve',
        'contract:runs_apply',
      ],
      env: baseEnv(),
      cwd: REPO_ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cfh-host-obeyed', version: '0.0.1' });
    await client.connect(transport);
    // Closed on every path: a failed expectation must not leave the run writing its evidence
    // into a scratch directory removed under it.
    let dir: string;
    try {
      type Obs = { status: string; summary: string; items: string[] };
      const call = async (name: string, args: Record<string, unknown>) =>
        (await client.callTool({ name, arguments: args })).structuredContent as Obs;
      const planted = await call('sandbox_exec', { argv: ['sh', '-c', PLANT] });
      expect(planted.status, JSON.stringify(planted)).toBe('success');
      const diff = await call('runs_diff', {});
      expect(diff.items).toEqual(
        expect.arrayContaining([
          'A work.txt',
          expect.stringMatching(/^A \.envrc \(held back: a path your tools obey \(direnv\)/),
          expect.stringMatching(/^M \.git\/config \(held back/),
          expect.stringMatching(/^A \.git\/hooks\/x \(held back/),
        ]),
      );
      const digest = /patch ([0-9a-f]{64})/.exec(diff.summary)?.[1] ?? '';
      const applied = await call('runs_apply', { patch: digest });
      expect(applied.status, JSON.stringify(applied)).toBe('success');
      expect(applied.items).toEqual(['A work.txt']);
      expect(applied.summary).toContain('3 held back');
      expect(await readFile(path.join(repo, 'work.txt'), 'utf8')).toBe('the work\n');
      expect(existsSync(path.join(repo, '.envrc'))).toBe(false);
      expect(existsSync(path.join(repo, '.git', 'hooks', 'x'))).toBe(false);
      expect(await configOf(repo)).toBe(config);
    } finally {
      await client.close();
      // The run ends once its client has gone: wait for it, on every path.
      dir = await finished(root);
    }

    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'draft_applied')?.data).toMatchObject({
      paths: ['work.txt'],
      heldBack: HELD,
    });
    // The remainder is the run's patch: the operator names what the host may take.
    const rest = await cfh([
      'runs',
      'apply',
      runIdOf(dir),
      '--artifact-root',
      root,
      '--yes',
      '--host-obeyed',
      '.envrc',
    ]);
    expect(rest.exitCode, rest.stderr).toBe(0);
    expect(await readFile(path.join(repo, '.envrc'), 'utf8')).toBe('export PLANTED=1\n');
    expect(existsSync(path.join(repo, '.git', 'hooks', 'x'))).toBe(false);
    expect(await configOf(repo)).toBe(config);
  });
});
