// `--env K=V`, `--env K`, `--env-file FILE` against the real engine: the values reach the
// sandbox's environment (the command's, and an agent run's `exec` tool's), and nothing cfh
// writes keeps one (AH-INV-2): the whole run directory is searched for every value, and
// so is `--json`'s output. The values are never put in the command's argv here (the
// snapshot records argv): the command shows their digests, computed inside.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { agentRunArgs, cfh, copySampleRepo, onlyRunDir, readJson, useScratch } from './helpers.js';

const scratch = useScratch('command-env');

const FLAG_VALUE = 'flag-secret-7f3a9c1e5b';
const FILE_VALUE = '"file secret 2d8e4f6a" # kept as written';
const HOST_VALUE = 'host-secret-91b7c3d5e';
const VALUES = [FLAG_VALUE, FILE_VALUE, HOST_VALUE];

const sha = (v: string): string => createHash('sha256').update(v).digest('hex');

/** Every file under `dir` whose bytes contain `needle`, as paths relative to it. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const name of await readdir(d)) {
      const p = path.join(d, name);
      if ((await stat(p)).isDirectory()) await walk(p);
      else if ((await readFile(p)).includes(Buffer.from(needle))) found.push(path.relative(dir, p));
    }
  };
  await walk(dir);
  return found.sort();
}

async function envFile(name: string): Promise<string> {
  return scratch.file(
    name,
    ['# the operator’s variables', '', `  FROM_FILE=${FILE_VALUE}`, 'FROM_HOST_IN_FILE', ''].join(
      '\n',
    ),
  );
}

// The digests of the three values, each line `NAME <sha256>`, computed in the sandbox.
const SHOW_DIGESTS = [
  'sh',
  '-c',
  'for n in TOKEN FROM_FILE FROM_HOST FROM_HOST_IN_FILE; do printf "%s " "$n"; eval "printf %s \\"\\$$n\\"" | sha256sum | cut -d" " -f1; done',
];

describe('command run: values reach the command, never the evidence', () => {
  for (const json of [false, true]) {
    it(`${json ? '--json: ' : ''}the command sees every value; no file of the run and no output of cfh holds one`, async () => {
      const repo = await copySampleRepo(scratch.path(`repo-${json}`));
      const root = scratch.path(`art-${json}`);
      const file = await envFile(`vars-${json}.env`);
      const r = await cfh(
        [
          'sandbox',
          'run',
          '--workspace',
          repo,
          '--artifact-root',
          root,
          ...(json ? ['--json'] : []),
          '--env',
          `TOKEN=${FLAG_VALUE}`,
          '--env-file',
          file,
          '-e',
          'FROM_HOST',
          '--',
          ...SHOW_DIGESTS,
        ],
        { env: { FROM_HOST: HOST_VALUE, FROM_HOST_IN_FILE: HOST_VALUE } },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      const want = [
        `TOKEN ${sha(FLAG_VALUE)}`,
        `FROM_FILE ${sha(FILE_VALUE)}`,
        `FROM_HOST ${sha(HOST_VALUE)}`,
        `FROM_HOST_IN_FILE ${sha(HOST_VALUE)}`,
        '',
      ].join('\n');
      const shown = json
        ? (JSON.parse(r.stdout) as { stdout: { text: string } }).stdout.text
        : r.stdout;
      expect(shown).toBe(want);
      const dir = await onlyRunDir(root);
      for (const v of VALUES) {
        expect(await filesHolding(dir, v), v).toEqual([]);
        expect(r.stdout + r.stderr).not.toContain(v);
      }
      const snapshot = await readJson<{
        commandEnv: Record<string, { from: string; digest: string }>;
        containerSpec: { envNames: string[] };
      }>(path.join(dir, 'snapshot.json'));
      expect(Object.keys(snapshot.commandEnv)).toEqual([
        'FROM_FILE',
        'FROM_HOST',
        'FROM_HOST_IN_FILE',
        'TOKEN',
      ]);
      expect(snapshot.commandEnv.TOKEN?.from).toBe('flag');
      expect(snapshot.commandEnv.FROM_HOST?.from).toBe('host');
      expect(snapshot.commandEnv.FROM_FILE).toMatchObject({ from: 'file', file, line: 3 });
      // Keyed digests: not the bare sha256 anyone holding the evidence could test guesses with.
      for (const rec of Object.values(snapshot.commandEnv)) {
        expect(rec.digest).toMatch(/^hmac-sha256:[0-9a-f]{16}:[0-9a-f]{64}$/);
        for (const v of VALUES) expect(rec.digest).not.toContain(sha(v));
      }
      expect(snapshot.containerSpec.envNames).toEqual(expect.arrayContaining(['TOKEN']));
      // `cfh runs show` reads the evidence back: nothing there either.
      const shownRun = await cfh(['runs', 'show', path.basename(dir), '--artifact-root', root]);
      for (const v of VALUES) expect(shownRun.stdout + shownRun.stderr).not.toContain(v);
    });
  }

  it('a value the command itself prints is in its output only (outputs/ keep its bytes exact)', async () => {
    const repo = await copySampleRepo(scratch.path('repo-print'));
    const root = scratch.path('art-print');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--env',
      `TOKEN=${FLAG_VALUE}`,
      '--',
      'sh',
      '-c',
      'printf "%s\\n" "$TOKEN"',
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${FLAG_VALUE}\n`);
    expect(await filesHolding(await onlyRunDir(root), FLAG_VALUE)).toEqual(['outputs/stdout']);
  });

  it('refuses, before anything exists: an unset --env K, a name the gate would read as an option', async () => {
    const root = scratch.path('art-refused');
    const unset = await cfh([
      'sandbox',
      'run',
      '--artifact-root',
      root,
      '-e',
      'CFH_NOT_SET_X',
      '--',
      'true',
    ]);
    expect(unset.exitCode).toBe(125);
    expect(unset.stderr).toMatch(/^cfh: --env: CFH_NOT_SET_X is not set/);
    const option = await cfh([
      'sandbox',
      'run',
      '--artifact-root',
      root,
      '-e',
      `-uPATH=${FLAG_VALUE}`,
      '--',
      'true',
    ]);
    expect(option.exitCode).toBe(125);
    expect(option.stderr).toContain('not a valid environment name');
    expect(option.stderr).not.toContain(FLAG_VALUE);
    await expect(readdir(root)).rejects.toThrow();
  });
});

describe('agent run: the exec tool’s env, scrubbed from what the model and the evidence see', () => {
  it('exec sees the value; its output reaches the transcript and the run directory redacted', async () => {
    const repo = await copySampleRepo(scratch.path('repo-agent'));
    const root = scratch.path('art-agent');
    const script = scratch.path('agent.yaml');
    const exec = (...command: string[]) => ({ name: 'exec', input: { command } });
    await writeFile(
      script,
      JSON.stringify({
        turns: [
          { tool_calls: [exec('sh', '-c', 'printf "%s" "$TOKEN" | sha256sum')] },
          { tool_calls: [exec('sh', '-c', 'echo "token is $TOKEN"; env')] },
          { text: 'done' },
        ],
      }),
    );
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script }, [
        '--env',
        `TOKEN=${FLAG_VALUE}`,
      ]),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    expect(await readFile(path.join(dir, 'outputs', 'call-0001.stdout'), 'utf8')).toContain(
      sha(FLAG_VALUE),
    );
    expect(await filesHolding(dir, FLAG_VALUE)).toEqual([]);
    expect(await readFile(path.join(dir, 'transcript.jsonl'), 'utf8')).toContain(
      '[redacted:TOKEN]',
    );
  });
});
