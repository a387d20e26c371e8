// `cfh sandbox run -i` / `-t` against the real engine: cfh's stdin reaches the command only
// when asked (and then intact, to its end of file), a TTY session is a real interactive
// shell whose terminal cfh always gives back, and neither stops a timeout or a signal from
// reaping the container. Under runc the start gate shares stdin with the workload: nothing
// of the gate's word may reach it, nothing of the input may reach the gate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CFH_MAIN,
  REPO_ROOT,
  baseEnv,
  containersOfRun,
  docker,
  onlyRunDir,
  readJson,
  removeDir,
  runIdOf,
  tempDir,
} from './helpers.js';

const PTY_DRIVE = fileURLToPath(new URL('./pty-drive.py', import.meta.url));
let scratch: string;
let workspace: string;
let runsc = false;
let n = 0;

beforeAll(async () => {
  scratch = await tempDir('stdio');
  workspace = path.join(scratch, 'ws');
  await mkdir(workspace);
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  runsc = Object.keys(info.Runtimes ?? {}).includes('runsc');
});
afterAll(async () => {
  await removeDir(scratch);
});

function runArgs(args: readonly string[]): { args: string[]; artifactRoot: string } {
  n += 1;
  const artifactRoot = path.join(scratch, `art-${n}`);
  return {
    args: ['sandbox', 'run', '--workspace', workspace, '--artifact-root', artifactRoot, ...args],
    artifactRoot,
  };
}

/** cfh with `input` as its stdin (a pipe), as `printf … | cfh …` gives it. */
async function piped(args: readonly string[], input: Buffer | string, timeoutMs = 120_000) {
  const r = runArgs(args);
  const result = await execa(process.execPath, [CFH_MAIN, ...r.args], {
    reject: false,
    extendEnv: false,
    stripFinalNewline: false,
    env: baseEnv(),
    cwd: REPO_ROOT,
    input,
    encoding: 'buffer',
    timeout: timeoutMs,
  });
  return {
    exitCode: result.exitCode ?? -1,
    stdout: Buffer.from(result.stdout),
    stderr: Buffer.from(result.stderr).toString('utf8'),
    artifactRoot: r.artifactRoot,
  };
}

interface PtyResult {
  output: string;
  exitCode: number;
  cooked: boolean;
  failure: string | null;
}

type PtyStep =
  | { wait: string; timeout?: number }
  | { type: string }
  | { resize: [number, number] }
  | { signal: 'SIGTERM' | 'SIGINT' }
  | { sleep: number };

/** cfh as the session leader of a real pseudo-terminal (pty-drive.py), driven by `steps`. */
async function onPty(
  args: readonly string[],
  size: [number, number],
  steps: PtyStep[],
): Promise<PtyResult & { artifactRoot: string }> {
  const r = runArgs(args);
  const result = await execa(
    'python3',
    [PTY_DRIVE, JSON.stringify([{ size }, ...steps]), process.execPath, CFH_MAIN, ...r.args],
    { reject: false, extendEnv: false, env: baseEnv({ TERM: 'xterm' }), cwd: REPO_ROOT },
  );
  if (result.exitCode !== 0) throw new Error(`pty-drive failed: ${result.stderr}`);
  return { ...(JSON.parse(result.stdout) as PtyResult), artifactRoot: r.artifactRoot };
}

const runtimes = ['runc', 'runsc'] as const;

describe('-i: stdin forwarded to the command', () => {
  for (const runtime of runtimes) {
    it(`${runtime}: the piped input reaches the command, exactly, and its end ends it`, async (ctx) => {
      if (runtime === 'runsc' && !runsc) ctx.skip('runsc not registered with the engine');
      // `go` first: under runc the gate reads cfh's word on the same stdin; none of the
      // input may be taken for it, and the word may not reach the command.
      const input = 'go\nx\nlast line without newline';
      const r = await piped(['--runtime', runtime, '-i', '--', 'cat'], input);
      // Only cfh's own last line: the input never comes back on stderr.
      expect(r.stderr).toMatch(/^cfh: run \S+ completed \(exit 0\); evidence in \S+\n$/);
      expect(r.exitCode).toBe(0);
      expect(r.stdout.toString('utf8')).toBe(input);
      const dir = await onlyRunDir(r.artifactRoot);
      const snapshot = await readJson(path.join(dir, 'snapshot.json'));
      expect(snapshot.io).toEqual({ stdin: 'forwarded', tty: false });
      const report = await readJson(path.join(dir, 'report.json'));
      expect(report.io).toEqual({ stdin: 'forwarded', tty: false });
    });
  }

  it('several MiB of binary input arrive intact (digest inside = digest outside)', async () => {
    const input = randomBytes(6 * 1024 * 1024);
    const want = createHash('sha256').update(input).digest('hex');
    const r = await piped(['-i', '--', 'sha256sum'], input);
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString('utf8')).toBe(`${want}  -\n`);
  });

  it('without -i the command reads an empty stdin even when cfh is given input', async () => {
    const r = await piped(['--', 'sh', '-c', 'wc -c; echo read-done'], 'not for the command\n');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString('utf8')).toBe('0\nread-done\n');
    const snapshot = await readJson(path.join(await onlyRunDir(r.artifactRoot), 'snapshot.json'));
    expect(snapshot.io).toEqual({ stdin: 'null', tty: false });
  });

  it('a stdin that never ends does not hold the run: the wall-time limit still reaps it', async () => {
    const r = runArgs(['--timeout', '3', '-i', '--', 'cat']);
    // A pipe cfh's test keeps open and never writes: `cat` would wait for ever.
    const child = execa(process.execPath, [CFH_MAIN, ...r.args], {
      reject: false,
      extendEnv: false,
      env: baseEnv(),
      cwd: REPO_ROOT,
      stdin: 'pipe',
      timeout: 90_000,
    });
    const result = await child;
    child.stdin.destroy();
    expect(result.exitCode).toBe(124);
    const dir = await onlyRunDir(r.artifactRoot);
    const report = await readJson<{ container: { removed: boolean } }>(
      path.join(dir, 'report.json'),
    );
    expect(report.container.removed).toBe(true);
    expect(await containersOfRun(runIdOf(dir))).toEqual([]);
  });
});

describe('-t: a pseudo-terminal for the command', () => {
  it('-t without a terminal on stdin is refused before anything exists', async () => {
    const r = await piped(['-t', '--', 'true'], '');
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toMatch(/^cfh: -t needs a terminal; /);
  });

  it('-i and -t are refused for an agent run (its model has no stdin)', async () => {
    for (const flag of ['-i', '-t', '-it']) {
      const r = await piped([flag, '--prompt', 'hello', '--script', '/nonexistent'], '');
      expect(r.exitCode).toBe(125);
      expect(r.stderr).toContain('not for agent runs');
      expect(r.stderr).toContain('model has no stdin');
    }
  });

  // bash on runc; dash on runsc: this gVisor build's terminal ends bash's readline at its
  // first read (`docker run -it --runtime=runsc … bash` exits alike), dash reads it fine.
  for (const [runtime, shell] of [
    ['runc', 'bash'],
    ['runsc', 'sh'],
  ] as const) {
    it(`${runtime}: -it -- ${shell} is an interactive shell: typed input, its exit status, the transcript kept`, async (ctx) => {
      if (runtime === 'runsc' && !runsc) ctx.skip('runsc not registered with the engine');
      const r = await onPty(
        ['--runtime', runtime, '-it', '--', shell],
        [30, 100],
        [
          { wait: '$ ' },
          // Typed at once: the first size must already be the terminal's.
          { type: 'stty size; test -t 0 && test -t 2 && echo "on-""tty"; echo "h""i"; exit 3\r' },
        ],
      );
      expect(r.failure).toBeNull();
      expect(r.exitCode).toBe(3);
      expect(r.output).toContain('30 100');
      expect(r.output).toMatch(/^on-tty\r/m);
      expect(r.output).toMatch(/^hi\r/m);
      // Nothing of the gate (its report, the echo of its word) is shown or kept.
      expect(r.output).not.toMatch(/cfh-gate|^go\r?$/m);
      expect(r.cooked).toBe(true);
      const dir = await onlyRunDir(r.artifactRoot);
      const snapshot = await readJson(path.join(dir, 'snapshot.json'));
      expect(snapshot.io).toEqual({ stdin: 'forwarded', tty: true });
      const report = await readJson(path.join(dir, 'report.json'));
      expect(report.io).toEqual({ stdin: 'forwarded', tty: true });
      expect(report.commandExitCode).toBe(3);
      const transcript = await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8');
      expect(transcript).toContain('30 100');
      expect(transcript).toMatch(/^hi\r$/m);
      expect(transcript).not.toMatch(/cfh-gate|^go\r?$/m);
      expect(await readFile(path.join(dir, 'outputs', 'stderr'), 'utf8')).toBe('');
    });
  }

  it('a resize of the terminal (SIGWINCH) reaches the command', async () => {
    const r = await onPty(
      ['-it', '--', 'bash'],
      [24, 80],
      [
        { wait: '$ ' },
        { resize: [33, 111] },
        { sleep: 1 },
        { type: 'stty size\r' },
        { wait: '33 111' },
        { type: 'exit\r' },
      ],
    );
    expect(r.failure).toBeNull();
    expect(r.exitCode).toBe(0);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to cfh mid-session: the container is reaped and the terminal given back cooked`, async () => {
      const r = await onPty(
        ['-it', '--', 'bash'],
        [24, 80],
        [{ wait: '$ ' }, { signal }, { sleep: 0.5 }],
      );
      expect(r.failure).toBeNull();
      expect(r.exitCode).toBe(signal === 'SIGTERM' ? 143 : 130);
      expect(r.cooked).toBe(true);
      const dir = await onlyRunDir(r.artifactRoot);
      expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    });
  }

  it('a failure after raw mode began (the container cannot start) still restores the terminal', async () => {
    // A command that is not in the image: the engine refuses the start (runsc) or the
    // gate's exec fails (runc); either way the run fails with the terminal in raw mode.
    const r = await onPty(['-it', '--', '/nonexistent-program'], [24, 80], [{ sleep: 0.1 }]);
    expect(r.exitCode).not.toBe(0);
    expect(r.cooked).toBe(true);
  });
});
