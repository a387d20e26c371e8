// The README's quick-start and agent examples run as written (issue "Everyday use": a
// README whose first examples cannot work is a broken promise). Every `bin/cfh ...` line of
// the "use it on your own code" and "Agent runs" blocks is taken from README.md itself and
// run by bash, in a sample repository this test creates (its Makefile's `check` and `fix`,
// its package.json's `test`, its build.sh), with `bin/cfh` linked to this checkout's.
// Only `RUN_ID` is filled in (the last run's id). Lines that need ANTHROPIC_API_KEY or
// OPENAI_API_KEY talk to a model endpoint and are never run by a test; each one is counted.
import { execa } from 'execa';
import { chmod, cp, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRecipe } from '../../src/image/recipe.js';
import { README_TOOLCHAIN, toolchainRecipe } from '../../src/image/toolchain.js';
import { REPO_ROOT, baseEnv, docker, ownBySandbox, useScratch } from './helpers.js';

const scratch = useScratch('readme');

/** The fenced `sh` block that follows `marker` (a line of prose or a heading). */
function blockAfter(readme: string, marker: string): string[] {
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no '${marker}'`);
  const open = readme.indexOf('```sh\n', at);
  const close = readme.indexOf('\n```', open + 6);
  if (open < 0 || close < 0) throw new Error(`no sh block after '${marker}'`);
  // Continuation lines (`\` at the end) join the line they continue.
  return readme
    .slice(open + 6, close)
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '');
}

/** The sample repository the examples are run in: what each README line assumes exists. */
async function sampleRepo(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'bin'), { recursive: true });
  await mkdir(path.join(dir, 'examples', 'agent'), { recursive: true });
  await symlink(path.join(REPO_ROOT, 'bin', 'cfh'), path.join(dir, 'bin', 'cfh'));
  await cp(path.join(REPO_ROOT, 'examples', 'sample-repo'), dir, { recursive: true });
  await cp(
    path.join(REPO_ROOT, 'examples', 'agent', 'fix-and-test.yaml'),
    path.join(dir, 'examples', 'agent', 'fix-and-test.yaml'),
  );
  await writeFile(
    path.join(dir, 'Makefile'),
    [
      'check:',
      '\tpython3 -B -m unittest -q test_calc',
      "\tnode -e \"process.exit(require('./package.json').name === 'sample' ? 0 : 1)\"",
      '\t@echo make check ok',
      'fix:',
      '\techo "# fixed" >> calc.py',
      '',
    ].join('\n'),
  );
  await writeFile(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'sample', version: '1.0.0', scripts: { test: 'node test.js' } }),
  );
  await writeFile(
    path.join(dir, 'test.js'),
    "const assert = require('node:assert');\nassert.strictEqual(1 + 1, 2);\nconsole.log('npm test ok');\n",
  );
  await writeFile(path.join(dir, 'build.sh'), '#!/bin/sh\nset -e\necho built "$(uname -s)"\n');
  await chmod(path.join(dir, 'build.sh'), 0o755);
  // As root the sandbox runs as the workspace's owner: a repository someone checked out.
  await ownBySandbox(dir);
  for (const f of ['Makefile', 'package.json', 'test.js', 'build.sh', 'calc.py', 'test_calc.py'])
    await ownBySandbox(path.join(dir, f));
}

describe("the README's examples run as written", () => {
  it('every bin/cfh line of the quick start and agent blocks succeeds', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const lines = [
      ...blockAfter(readme, 'Then use it on your own code'),
      ...blockAfter(readme, '## Agent runs'),
    ];
    const runnable = lines.filter((l) => l.startsWith('bin/cfh '));
    const needKey = lines.filter((l) => /^(ANTHROPIC|OPENAI)_API_KEY=/.test(l));
    // Every line is one or the other: nothing in these blocks goes unchecked silently.
    expect([...runnable, ...needKey].sort()).toEqual([...lines].sort());
    expect(runnable.length).toBeGreaterThanOrEqual(6);

    // Built by `make image` (and so by .ci/run) before the tests: never built here, and
    // never pulled (the README's `image build` line then finds it present and does nothing).
    const toolchain = toolchainRecipe(loadRecipe(), README_TOOLCHAIN).ref;
    const present = await docker
      .getImage(toolchain)
      .inspect()
      .catch(() => undefined);
    if (present === undefined) throw new Error(`${toolchain} missing: run 'make image' first`);

    const repo = scratch.path('repo');
    await sampleRepo(repo);
    // The repository's owner reaches it (a draft is copied with that owner's authority).
    await chmod(path.dirname(repo), 0o755);
    const env = baseEnv({ XDG_STATE_HOME: scratch.path('state') });
    let lastRun: string | undefined;
    for (const line of runnable) {
      if (line.includes('RUN_ID') && lastRun === undefined)
        throw new Error(`'${line}' needs a run before it`);
      const command = line.replaceAll('RUN_ID', lastRun ?? 'RUN_ID');
      const r = await execa('bash', ['-c', command], {
        cwd: repo,
        env,
        extendEnv: false,
        reject: false,
        timeout: 600_000,
      });
      expect(r.exitCode, `${command}\n${r.stdout}\n${r.stderr}`).toBe(0);
      const list = await execa(path.join(repo, 'bin', 'cfh'), ['runs', 'list', '--json'], {
        cwd: repo,
        env,
        extendEnv: false,
      });
      const runs = JSON.parse(list.stdout) as { runId: string }[];
      // Run ids sort by time: the newest is the run this line made.
      lastRun =
        runs
          .map((x) => x.runId)
          .sort()
          .at(-1) ?? lastRun;
      if (line.includes('make check')) expect(r.stdout).toContain('make check ok');
      if (line.includes('npm test')) expect(r.stdout).toContain('npm test ok');
      if (line.includes('./build.sh')) expect(r.stdout).toContain('built Linux');
    }
  });
});
