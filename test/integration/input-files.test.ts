// Every file a user names (--context, --quote, --script, profiles and their `extends`
// chain) is read by one bounded reader (AH-INV-4): regular files only, a size cap, and for
// prompt material no symbolic link anywhere in the path. A refusal is exit 125, one line
// naming the flag and the file, before any run directory or engine object exists; nothing
// can make cfh hang before it starts.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { agentRunArgs, useScratch, type CfhResult } from './helpers.js';
import { expectOneLineRefusal, refusal } from './refusal.js';

const scratch = useScratch('input-files');

let n = 0;

/** Runs cfh with a fresh artifact root and expects a prompt refusal. */
function refused(argsFor: (artifactRoot: string) => string[]): Promise<CfhResult> {
  n += 1;
  const root = scratch.path(`art-${n}`);
  return refusal(argsFor(root), root);
}

const expectOneLine = expectOneLineRefusal;

describe('--context and --quote', () => {
  it('refuse a symbolic link in the repository that points at a host-only file', async () => {
    const repo = await scratch.sampleRepo();
    const secret = await scratch.file('host-only-secret.txt', 'CANARY-host-only-3f1c\n');
    await symlink(secret, path.join(repo, 'NOTES.md'));
    for (const flag of ['--context', '--quote']) {
      const r = await refused((art) =>
        agentRunArgs({ workspace: repo, artifactRoot: art }, [flag, path.join(repo, 'NOTES.md')]),
      );
      expectOneLine(r, new RegExp(`^cfh: ${flag}: '.*NOTES\\.md' goes through the symbolic link`));
      expect(r.stderr).toContain('give the real path');
      expect(r.stderr).not.toContain('CANARY');
    }
  });

  it('refuse a symbolic link in a directory component of the path, naming that component', async () => {
    const repo = await scratch.sampleRepo();
    await mkdir(scratch.path('host-dir'));
    await writeFile(scratch.path('host-dir/notes.md'), 'CANARY-dir-9a2e\n');
    await symlink(scratch.path('host-dir'), path.join(repo, 'docs'));
    const r = await refused((art) =>
      agentRunArgs({ workspace: repo, artifactRoot: art }, [
        '--context',
        path.join(repo, 'docs', 'notes.md'),
      ]),
    );
    expectOneLine(r, /goes through the symbolic link '.*\/docs'/);
    expect(r.stderr).not.toContain('CANARY');
  });

  it('refuse a FIFO at once (cfh used to block before anything started, deaf to SIGTERM)', async () => {
    const repo = await scratch.sampleRepo();
    const fifo = scratch.path('context.fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await refused((art) =>
      agentRunArgs({ workspace: repo, artifactRoot: art }, ['--context', fifo]),
    );
    expectOneLine(r, /^cfh: --context: '.*context\.fifo' is a FIFO; give a regular file$/);
  });

  it('refuse a device and a file on a kernel pseudo file system', async () => {
    const repo = await scratch.sampleRepo();
    for (const [file, what] of [
      ['/dev/null', /is a character device/],
      ['/proc/version', /is on the kernel's proc file system/],
      ['/proc/self/environ', /goes through the symbolic link '\/proc\/self'/],
    ] as const) {
      const r = await refused((art) =>
        agentRunArgs({ workspace: repo, artifactRoot: art }, ['--quote', file]),
      );
      expectOneLine(r, what);
    }
  });

  it('refuse a file over 1 MiB, and files over 8 MiB together', async () => {
    const repo = await scratch.sampleRepo();
    const big = await scratch.file('big.md', 'x'.repeat(1024 * 1024 + 1));
    const r = await refused((art) =>
      agentRunArgs({ workspace: repo, artifactRoot: art }, ['--context', big]),
    );
    expectOneLine(
      r,
      /'.*big\.md' is 1048577 bytes, more than the 1048576-byte limit for --context/,
    );

    const mib = await scratch.file('one-mib.md', 'y'.repeat(1024 * 1024));
    const many = Array.from({ length: 9 }, () => ['--quote', mib]).flat();
    const all = await refused((art) => agentRunArgs({ workspace: repo, artifactRoot: art }, many));
    expectOneLine(
      all,
      /^cfh: --quote: '.*one-mib\.md' brings the --context and --quote files to more than 8388608 bytes together/,
    );
  });
});

describe('profiles and scripts', () => {
  it('refuse a 30 MB profile before parsing it', async () => {
    const repo = await scratch.sampleRepo();
    const huge = scratch.path('huge.yaml');
    // Accepted and parsed by today's code (about 1.3 GB of memory), then run.
    await writeFile(huge, `extends: default\nname: huge\ndescription: ${'d'.repeat(30_000_000)}\n`);
    const r = await refused((art) => [
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--profile',
      huge,
      '--',
      'true',
    ]);
    expectOneLine(
      r,
      /^cfh: profile .*huge\.yaml: '.*huge\.yaml' is 3\d{7} bytes, more than the 262144-byte limit/,
    );
  });

  it('bound every file of the extends chain, and refuse a FIFO there', async () => {
    const repo = await scratch.sampleRepo();
    const fifo = scratch.path('base.fifo');
    execFileSync('mkfifo', [fifo]);
    const child = await scratch.file('child-of-fifo.yaml', `extends: ${fifo}\nname: child\n`);
    const r = await refused((art) => [
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--profile',
      child,
      '--',
      'true',
    ]);
    expectOneLine(r, /'.*base\.fifo' is a FIFO; give a regular file/);

    await writeFile(scratch.path('big-base.yaml'), `name: big\n#${'z'.repeat(300 * 1024)}\n`);
    const small = await scratch.file('child-of-big.yaml', 'extends: big-base.yaml\nname: small\n');
    const big = await refused((art) => [
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--profile',
      small,
      '--',
      'true',
    ]);
    expectOneLine(big, /'.*big-base\.yaml' is \d+ bytes, more than the 262144-byte limit/);
  });

  it('refuse a --script FIFO and a --script over 1 MiB', async () => {
    const repo = await scratch.sampleRepo();
    const fifo = scratch.path('script.fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await refused((art) =>
      agentRunArgs({ workspace: repo, artifactRoot: art, script: fifo }),
    );
    expectOneLine(r, /^cfh: --script: '.*script\.fifo' is a FIFO; give a regular file$/);

    const big = await scratch.file(
      'big-script.yaml',
      `turns:\n  - text: ${'w'.repeat(1024 * 1024)}\n`,
    );
    const s = await refused((art) =>
      agentRunArgs({ workspace: repo, artifactRoot: art, script: big }),
    );
    expectOneLine(
      s,
      /^cfh: --script: '.*big-script\.yaml' is \d+ bytes, more than the 1048576-byte limit/,
    );
  });
});
