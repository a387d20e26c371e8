// The package as a user installs it: `npm pack`, then the tarball unpacked into a
// temporary prefix with its production dependencies (from the lockfile and npm's cache,
// offline: no traffic leaves this machine), then `cfh` started from another directory
// through a link on a bin directory, as `npm install -g` lays it out. Catches a `files`
// list that leaves out what cfh reads at run time (dist/, profiles/, seccomp/, images/,
// rate-cards/, conformance/).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { z } from 'zod';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, baseEnv } from './helpers.js';

// npm from PATH (the Makefile puts the Node it installed first), run by the same Node.
const NPM = 'npm';
const NODE_FIRST = { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` };

describe('the packed package', () => {
  it('installs from its tarball and runs from any directory', { timeout: 300_000 }, async () => {
    const prefix = await mkdtemp(path.join(os.tmpdir(), 'cfh-install-'));
    try {
      // dist/ is already built for the suite; --ignore-scripts keeps prepack from
      // rebuilding it under the other tests' feet.
      const packed = await execa(
        NPM,
        ['pack', '--ignore-scripts', '--json', '--pack-destination', prefix],
        { cwd: REPO_ROOT, env: baseEnv(NODE_FIRST), extendEnv: false },
      );
      const info = z
        .array(z.object({ filename: z.string(), files: z.array(z.object({ path: z.string() })) }))
        .length(1)
        .parse(JSON.parse(packed.stdout))[0];
      if (info === undefined) throw new Error('npm pack printed no package');
      const files = info.files.map((f) => f.path);
      expect(files).toContain('dist/cli/main.js');
      expect(files).toContain('profiles/default.yaml');
      expect(files).toContain('seccomp/base.json');
      expect(files.some((f) => f.startsWith('test/') || f.startsWith('src/'))).toBe(false);

      const pkg = path.join(prefix, 'lib', 'node_modules', 'cfh');
      await mkdir(pkg, { recursive: true });
      await execa('tar', [
        'xzf',
        path.join(prefix, info.filename),
        '-C',
        pkg,
        '--strip-components=1',
      ]);
      await copyFile(
        path.join(REPO_ROOT, 'package-lock.json'),
        path.join(pkg, 'package-lock.json'),
      );
      await execa(NPM, ['ci', '--omit=dev', '--offline', '--no-audit', '--no-fund'], {
        cwd: pkg,
        env: baseEnv(NODE_FIRST),
        extendEnv: false,
      });
      const bin = path.join(prefix, 'bin');
      await mkdir(bin);
      await symlink('../lib/node_modules/cfh/bin/cfh', path.join(bin, 'cfh'));

      const elsewhere = path.join(prefix, 'project');
      await mkdir(elsewhere);
      await writeFile(path.join(elsewhere, 'hello.txt'), 'hello from the project\n');
      // The installed cfh runs with the Node on PATH, as a global install does.
      const env = baseEnv(NODE_FIRST);
      const version = await execa(path.join(bin, 'cfh'), ['--version'], {
        cwd: elsewhere,
        env,
        extendEnv: false,
        reject: false,
      });
      expect(version.stderr).toBe('');
      expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      const run = await execa(
        path.join(bin, 'cfh'),
        ['sandbox', 'run', '--artifact-root', path.join(prefix, 'runs'), '--', 'cat', 'hello.txt'],
        { cwd: elsewhere, env, extendEnv: false, reject: false },
      );
      expect(run.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toContain('hello from the project');
    } finally {
      await rm(prefix, { recursive: true, force: true });
    }
  });
});
