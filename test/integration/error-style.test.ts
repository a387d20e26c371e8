// One error style (docs/operators.md, "Errors"): every common mistake, walked through bin/cfh
// as a user makes it, prints ONE line on stderr, `cfh: WHAT; HINT`, nothing on stdout, and
// exits with the status of its class from the one mapping (src/cli/exit-status.ts): 2 for a
// usage error of any command but `sandbox run`, 125 when `sandbox run` could not start.
// Every value the tests control (a run id, a flag, a key) is varied, so the style is a
// property of the class, not of one spelling.
import { mkdir } from 'node:fs/promises';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { cfh, useScratch, type CfhResult } from './helpers.js';

const scratch = useScratch('error-style');
let env: Record<string, string>;
let root: string;
let workspace: string;

beforeAll(async () => {
  root = scratch.path('runs');
  workspace = scratch.path('ws');
  await mkdir(root);
  await mkdir(workspace);
  // Everything cfh could write or read of its own lives in the scratch directory.
  env = {
    CFH_ARTIFACT_ROOT: root,
    CFH_KEY_DIR: scratch.path('keys'),
    CFH_STATE_DIR: scratch.path('state'),
    XDG_CONFIG_HOME: scratch.path('config'),
    XDG_STATE_HOME: scratch.path('xdg-state'),
  };
});

const ONE_LINE = /^cfh: [^;\n]+; [^\n]+$/;

/** `cfh: WHAT; HINT`, one line on stderr, nothing on stdout, the status of the class. */
function expectStyle(r: CfhResult, exitCode: number, pattern: RegExp): string {
  expect(r.stdout, 'nothing on stdout').toBe('');
  const lines = r.stderr.replace(/\n$/, '').split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  const line = lines[0] ?? '';
  expect(line).toMatch(ONE_LINE);
  // A line feed or a tab shown escaped is a multi-line message squeezed, not one line.
  expect(line).not.toMatch(/\\[nrt]/);
  expect(line).toMatch(pattern);
  expect(r.exitCode, r.stderr).toBe(exitCode);
  return line;
}

const run = (args: readonly string[], extra: Record<string, string> = {}): Promise<CfhResult> =>
  cfh(args, { env: { ...env, ...extra }, cwd: workspace });

describe('an unknown run id: one message and one code in every command that takes one', () => {
  // Well formed but absent, and not a run id at all: each the same in every command.
  const ids = ['20261202T004500Z-abcdef12', '20991231T235959Z-00000000', 'nope', 'latest'];
  const commands: readonly (readonly [string, (id: string) => string[], number])[] = [
    ['runs show', (id) => ['runs', 'show', id], 2],
    ['runs show --json', (id) => ['runs', 'show', id, '--json'], 2],
    ['runs diff', (id) => ['runs', 'diff', id], 2],
    ['runs apply', (id) => ['runs', 'apply', id, '--yes'], 2],
    ['runs report', (id) => ['runs', 'report', id, '--out', scratch.path('r.html')], 2],
    ['runs export', (id) => ['runs', 'export', id, '--out', scratch.path('r.otlp.json')], 2],
    ['audit', (id) => ['audit', id], 2],
    // `sandbox run` could not start: 125, as for every refusal before a run.
    [
      'sandbox run --from-plan',
      (id) => ['sandbox', 'run', '--provider', 'scripted', '--prompt', 'go', '--from-plan', id],
      125,
    ],
  ];
  for (const id of ids) {
    it(`'${id}': the same line from every command`, async () => {
      const lines = new Set<string>();
      for (const [name, args, exitCode] of commands) {
        const r = await run(args(id));
        if (name.endsWith('--json')) {
          // --json: the same line on stderr, and the documented error object on stdout.
          const doc = JSON.parse(r.stdout) as { status: string; error: { code: string } };
          expect(doc.status).toBe('failed');
          expect(doc.error.code).toBe('unknown_run');
          expectStyle({ ...r, stdout: '' }, exitCode, /./);
          lines.add(r.stderr);
          continue;
        }
        lines.add(expectStyle(r, exitCode, new RegExp(`^cfh: no run '${id}' under `)) + '\n');
      }
      expect([...lines]).toHaveLength(1);
      const [line] = [...lines];
      expect(line).toMatch(/; cfh runs list /);
    });
  }
});

describe('usage mistakes: one line and a pointer to --help, never the help itself', () => {
  it.each([
    [
      ['sandbox', 'run', '--memroy', '1g', '--', 'true'],
      125,
      /^cfh: unknown option '--memroy'; did you mean --memory\? \(cfh sandbox run --help\)$/,
    ],
    [
      ['sandbox', 'run', '--workspce', '.', '--', 'true'],
      125,
      /^cfh: unknown option '--workspce'; did you mean --workspace\? \(cfh sandbox run --help\)$/,
    ],
    [
      ['runs', 'show', '--jsno', 'x'],
      2,
      /^cfh: unknown option '--jsno'; did you mean --json\? \(cfh runs show --help\)$/,
    ],
    [
      ['doctor', '--zzzz'],
      2,
      /^cfh: unknown option '--zzzz'; cfh doctor --help lists the options$/,
    ],
    [
      ['runs', 'shwo', 'x'],
      2,
      /^cfh: unknown command 'shwo'; did you mean show\? \(cfh runs --help\)$/,
    ],
    [
      ['sandbx', 'run'],
      2,
      /^cfh: unknown command 'sandbx'; did you mean sandbox\? \(cfh --help\)$/,
    ],
    [['runs', 'show'], 2, /^cfh: missing required argument 'runId'; cfh runs show --help$/],
    [
      ['sandbox', 'run', '--network', 'bogus', '--', 'true'],
      125,
      /^cfh: option '--network <mode>' argument 'bogus' is invalid; allowed choices are disabled, allowlist, open \(cfh sandbox run --help\)$/,
    ],
    [
      ['sandbox', 'run', '--profile'],
      125,
      /^cfh: option '--profile <name\|file>' argument missing; cfh sandbox run --help$/,
    ],
  ])('cfh %j', async (args, exitCode, pattern) => {
    expectStyle(await run(args), exitCode, pattern);
  });

  it('--help still prints the help, on stdout, exit 0', async () => {
    const r = await run(['sandbox', 'run', '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--memory <size>/);
  });
});

describe('configuration mistakes', () => {
  it.each([['/nonexistent-workspace'], ['relative/missing']])(
    'a missing workspace %s',
    async (ws) => {
      expectStyle(
        await run(['sandbox', 'run', '--workspace', ws, '--', 'true']),
        125,
        /^cfh: --workspace: '.+' does not exist; /,
      );
    },
  );

  it.each([
    ['an unclosed flow sequence', 'a: [1\nb: 2\n', 2, 1],
    ['a tab as indentation', 'extends: default\n\tname: x\n', 2, 1],
    ['an unterminated quote', 'extends: default\nname: "x\nimage: y\n', 4, 1],
  ])('bad YAML (%s): file:line:col, no excerpt', async (_name, body, line, col) => {
    const file = await scratch.file(`bad-${line}-${col}-${body.length}.yaml`, body);
    const shown = expectStyle(
      await run(['sandbox', 'run', '--profile', file, '--', 'true']),
      125,
      new RegExp(`^cfh: profile ${file}:${line}:${col}: not valid YAML \\([A-Z_]+\\); `),
    );
    // Nothing of the file's text is quoted.
    for (const word of ['extends', 'name', 'image', '"x']) expect(shown).not.toContain(word);
  });

  it('bad YAML in profiles show: the same line, nothing on stdout', async () => {
    const file = await scratch.file('show-bad.yaml', 'a: [1\nb: 2\n');
    expectStyle(
      await run(['profiles', 'show', file]),
      2,
      new RegExp(`^cfh: profile ${file}:2:1: not valid YAML`),
    );
  });

  it.each([
    ['netwrk: {mode: open}\n', 2, 1, 'netwrk', 'at top level', 'network'],
    ['limits:\n  memroy: 1g\n', 3, 3, 'memroy', 'in limits', 'memory'],
    ['network:\n  mdoe: open\n', 3, 3, 'mdoe', 'in network', 'mode'],
  ])('a misspelt key %j', async (body, line, col, key, where, suggestion) => {
    const file = await scratch.file(`misspelt-${key}.yaml`, `extends: default\n${body}`);
    expectStyle(
      await run(['sandbox', 'run', '--profile', file, '--', 'true']),
      125,
      new RegExp(
        `^cfh: profile ${file}:${line}:${col}: unknown key '${key}' ${where}; did you mean '${suggestion}'\\?$`,
      ),
    );
  });

  it('an unknown key near no known one is located, never quoted', async () => {
    const file = await scratch.file(
      'secret-key.yaml',
      'extends: default\nAKIAIOSFODNN7EXAMPLE: x\n',
    );
    const line = expectStyle(
      await run(['sandbox', 'run', '--profile', file, '--', 'true']),
      125,
      new RegExp(`^cfh: profile ${file}:2:1: an unknown key at top level; known keys: `),
    );
    expect(line).not.toContain('AKIA');
  });

  it.each([
    [
      ['--memory', '512'],
      /^cfh: --memory: '512' has no unit; write '512m' \(MiB\) or '512g' \(GiB\)/,
    ],
    [['--memory', '104857600'], /^cfh: --memory: '104857600' has no unit; write '104857600m'/],
  ])('a size without a unit %j', async (flags, pattern) => {
    expectStyle(await run(['sandbox', 'run', ...flags, '--', 'true']), 125, pattern);
  });

  it('a profile size without a unit names the field, not the value', async () => {
    const file = await scratch.file(
      'bare-size.yaml',
      'extends: default\nlimits:\n  memory: 536870912\n',
    );
    const line = expectStyle(
      await run(['sandbox', 'run', '--profile', file, '--', 'true']),
      125,
      /^cfh: .*limits\.memory: a size needs a unit; /,
    );
    expect(line).not.toContain('536870912');
  });

  it.each([['nope'], ['./missing.yaml']])('profiles show %s: stderr only', async (name) => {
    expectStyle(await run(['profiles', 'show', name]), 2, /^cfh: profile '.+' not found; /);
  });
});

describe('the engine is down', () => {
  it('a socket path with nothing behind it: named, with how to start the engine', async () => {
    const socket = scratch.path('no-engine.sock');
    const line = expectStyle(
      await run(['sandbox', 'run', '--', 'true'], { DOCKER_HOST: `unix://${socket}` }),
      125,
      new RegExp(`^cfh: no Docker engine answers at ${socket} \\(ENOENT\\); start it `),
    );
    expect(line).toMatch(/scripts\/engine-up\.sh|dockerd/);
  });

  it('a socket file nobody listens on (ECONNREFUSED): the same shape, in reap too (exit 1)', async () => {
    // Bound and never listening: the file stays, and connect(2) is refused.
    const socket = scratch.path('refusing.sock');
    await execa('python3', [
      '-c',
      'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])',
      socket,
    ]);
    const host = { DOCKER_HOST: `unix://${socket}` };
    expectStyle(
      await run(['sandbox', 'run', '--', 'true'], host),
      125,
      new RegExp(`^cfh: no Docker engine answers at ${socket} \\(ECONNREFUSED\\); start it `),
    );
    expectStyle(
      await run(['reap', '--dry-run', '--run', '20261202T004500Z-abcdef12'], host),
      1,
      new RegExp(`^cfh: no Docker engine answers at ${socket} \\(ECONNREFUSED\\); start it `),
    );
    expectStyle(await run(['doctor', '--zzzz'], host), 2, /^cfh: unknown option '--zzzz'; /);
  });
});

describe('a missing image', () => {
  it.each([['cfh-error-style-missing:never'], ['localhost/nobody/none:1']])(
    'a custom image REF %s: one line, exit 125',
    async (ref) => {
      const file = await scratch.file(
        `img-${ref.replace(/\W/g, '_')}.yaml`,
        `extends: default\nimage: ${ref}\n`,
      );
      const line = expectStyle(
        await run(['sandbox', 'run', '--profile', file, '--', 'true']),
        125,
        /^cfh: [^;]*image[^;]*; /,
      );
      // The image-specific hint (which command builds THAT image) is the images work's.
      expect(line).toContain(ref);
    },
  );
});
