// Strings a sandbox, a model or a file chose never reach the terminal raw: `runs show` and
// `runs list` escape every control and invisible character (a sandbox cannot retitle the
// window, turn "deny" into "allow" on screen, or print a fake event line or a fake "chain
// intact"); the final answer of `sandbox run --prompt` keeps its line feeds only; the live
// output of `sandbox run -- CMD` on a TTY keeps SGR colours and \n \r \t \b and escapes the
// rest, and is byte-exact when not a TTY. --json and the run directory stay exact.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GENESIS_HASH, hashEvent } from '../../src/evidence/event-log.js';
import { newRunId } from '../../src/evidence/run-id.js';
import { CFH_MAIN, baseEnv, cfh, onlyRunDir, readEvents, runIdOf, useScratch } from './helpers.js';

const scratch = useScratch('terminal-escape');

const ESC = '\u001b';
/** What a terminal acts on: C0 (LF allowed separately), DEL, C1, bidi and invisible format. */
const RAW_CONTROL =
  // eslint-disable-next-line no-control-regex -- the point: find raw control characters
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]/u;

const TITLE = `${ESC}]0;pwned${ESC}\\`;
const FAKE_LINES = `x\n  99 2026-01-01T00:00:00.000Z run_finished\nevidence   verified (1 events)`;
const HOSTILE = {
  arg: `deny\rallow ${TITLE}`,
  fakeLines: FAKE_LINES,
  profile: `p${ESC}[2J${ESC}[H`,
  image: `img\u202egnp.exe`,
  mountSource: `/src${ESC}[1A${ESC}[2K`,
  allow: `a.test\u009b2J`,
  dnsName: `evil.test${ESC}[2K\r  allow tls   good.test:443 allowlisted`,
  protocol: `tls${ESC}]2;x\u0007`,
  reason: `not-allowlisted\u2028allowed`,
  terminalReason: `exited${ESC}[31m`,
  tool: `${ESC}[2Kread_file\u202e`,
};

async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** A run directory as cfh writes one, with hostile strings wherever a sandbox or model chose. */
async function hostileRunDir(root: string, kind: 'command' | 'agent'): Promise<string> {
  const runId = newRunId();
  const dir = path.join(root, runId);
  await mkdir(path.join(dir, 'outputs'), { recursive: true });
  await writeJson(path.join(dir, 'snapshot.json'), {
    runId,
    kind,
    command: ['sh', '-c', HOSTILE.arg, HOSTILE.fakeLines],
    profile: { name: HOSTILE.profile },
    image: { ref: HOSTILE.image, id: 'sha256:0' },
    containerSpec: {
      user: '1:1',
      mounts: [{ source: HOSTILE.mountSource, target: '/data', mode: 'ro' }],
      seccomp: { sha256: 'ab' },
    },
    network: { mode: 'allowlist', allow: [HOSTILE.allow], deny: [] },
    model: { adapter: 'scripted', languageModel: false },
    tools: ['read_file'],
    toolContainer: { lifetime: 'per-run' },
  });
  // A hostile writer chains its own lines: cfh's EventLog would refuse these (schema).
  const events: { type: string; data: Record<string, unknown> }[] = [
    { type: 'run_created', data: {} },
    {
      type: 'egress',
      data: {
        protocol: HOSTILE.protocol,
        name: HOSTILE.dnsName,
        address: '192.0.2.1',
        port: 443,
        allowed: false,
        reason: HOSTILE.reason,
        bytesOut: 0,
        bytesIn: 0,
      },
    },
    ...(kind === 'agent'
      ? [
          {
            type: 'tool_rejected',
            data: { callId: 'call-0001', tool: HOSTILE.tool, reason: `unknown_tool${ESC}[1A` },
          },
        ]
      : []),
    { type: 'run_finished', data: {} },
  ];
  let prevHash = GENESIS_HASH;
  const lines: string[] = [];
  for (const [i, e] of events.entries()) {
    const base = { seq: i + 1, ts: new Date().toISOString(), runId, ...e, prevHash };
    prevHash = hashEvent(base);
    lines.push(JSON.stringify({ ...base, hash: prevHash }));
  }
  await writeFile(path.join(dir, 'events.jsonl'), `${lines.join('\n')}\n`);
  const last = { seq: events.length, hash: prevHash };
  await writeJson(path.join(dir, 'state.json'), {
    runId,
    state: 'completed',
    terminalReason: HOSTILE.terminalReason,
    exitCode: 0,
    lastEvent: { seq: last.seq, hash: last.hash },
  });
  return runId;
}

function expectNoRawControls(text: string): void {
  for (const [i, line] of text.split('\n').entries()) {
    expect(line, `line ${i + 1}: ${JSON.stringify(line)}`).not.toMatch(RAW_CONTROL);
  }
}

describe('runs show and runs list with hostile run directories', () => {
  it('runs show escapes every field: no sequence, no extra line, one evidence verdict', async () => {
    const root = scratch.path('art-fixture');
    for (const kind of ['command', 'agent'] as const) {
      const runId = await hostileRunDir(root, kind);
      const r = await cfh(['runs', 'show', runId, '--artifact-root', root]);
      // The hand-made directory's files are in no record of its log: BROKEN, exit 1.
      expect(r.exitCode, r.stderr).toBe(1);
      expectNoRawControls(r.stdout);
      expect(r.stdout).not.toContain(ESC);
      // One real verdict line, and it is the true one; the forged "verified" stays inside
      // the command's line.
      const lines = r.stdout.split('\n');
      expect(lines.filter((l) => /^evidence\s+/.test(l))).toEqual([
        expect.stringMatching(/^evidence\s+BROKEN/),
      ]);
      if (kind === 'command')
        expect(lines.find((l) => l.startsWith('command    '))).toContain('evidence   verified');
      // The event lines are the log's, no more: the fake run_finished line stays inside the
      // command's field.
      const events = r.stdout.split('\n').filter((l) => /^\s+\d+ \d{4}-\d\d-\d\dT/.test(l));
      expect(events).toHaveLength(kind === 'agent' ? 4 : 3);
      // The egress attempt reads as denied, on one line, its name visibly escaped.
      const egress = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('  deny ') || l.startsWith('  allow'));
      expect(egress).toHaveLength(1);
      expect(egress[0]).toMatch(/^ {2}deny /);
      expect(egress[0]).toContain('evil.test\\x1b[2K\\r  allow tls');
      // The command is printed as JSON (so \r is `\r`, ESC `\u001b`); the rest escaped.
      if (kind === 'command') expect(r.stdout).toContain('deny\\rallow \\u001b]0;pwned\\u001b\\\\');
      expect(r.stdout).toContain('img\\u{202e}gnp.exe');
      if (kind === 'agent')
        expect(r.stdout).toContain('call-0001 "\\u001b[2Kread_file\\u{202e}" rejected');

      // --json is exact.
      const json = await cfh(['runs', 'show', runId, '--artifact-root', root, '--json']);
      const detail = JSON.parse(json.stdout) as {
        snapshot: { command: string[] };
        events: { data: { name?: string } }[];
      };
      expect(detail.snapshot.command).toEqual(['sh', '-c', HOSTILE.arg, HOSTILE.fakeLines]);
      expect(detail.events[1]?.data.name).toBe(HOSTILE.dnsName);
    }
    const list = await cfh(['runs', 'list', '--artifact-root', root]);
    expect(list.exitCode).toBe(0);
    expectNoRawControls(list.stdout);
    expect(list.stdout.trimEnd().split('\n')).toHaveLength(2);
    expect(list.stdout).toContain('p\\x1b[2J\\x1b[H');
  });
});

// printf's view of the hostile output: a title change, colour, a screen clear and an
// overprint. The sandbox prints it; only the TTY view is escaped.
const PRINTF =
  'printf "\\033]0;pwned\\007\\033[31mred\\033[0m \\033[2J\\033[Hdeny\\rallow\\tx\\bz\\n"';
const PRINTED = `${ESC}]0;pwned\u0007${ESC}[31mred${ESC}[0m ${ESC}[2J${ESC}[Hdeny\rallow\tx\bz\n`;

describe('a real run whose command prints hostile bytes', () => {
  it('is byte-exact on a pipe and in outputs/stdout; runs show escapes its command', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-pipe');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--',
      'sh',
      '-c',
      PRINTF,
      HOSTILE.arg,
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe(PRINTED);
    const dir = await onlyRunDir(root);
    expect(await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8')).toBe(PRINTED);
    const show = await cfh(['runs', 'show', runIdOf(dir), '--artifact-root', root]);
    expect(show.exitCode).toBe(0);
    expectNoRawControls(show.stdout);
    expect(show.stdout).toContain('deny\\rallow \\u001b]0;pwned\\u001b\\\\');
  });

  it('on a TTY keeps colours, \\r, \\t and \\b, and escapes the title change and cursor moves', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-tty');
    // script(1) gives cfh a pseudo-terminal for stdout and stderr.
    const launcher = await scratch.file(
      'tty-run.sh',
      `exec "${process.execPath}" "${CFH_MAIN}" sandbox run --workspace "${repo}" --artifact-root "${root}" -- sh -c '${PRINTF}'\n`,
    );
    const r = await execa('script', ['-qec', `sh ${launcher}`, '/dev/null'], {
      reject: false,
      extendEnv: false,
      env: baseEnv({ TERM: 'xterm' }),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    // The terminal turns \n into \r\n; everything else is what cfh wrote to it.
    const seen = r.stdout.replace(/\r\n/g, '\n');
    expect(seen).toContain(
      `\\x1b]0;pwned\\x07${ESC}[31mred${ESC}[0m \\x1b[2J\\x1b[Hdeny\rallow\tx\bz`,
    );
    expect(seen).not.toContain(`${ESC}]`);
    expect(seen).not.toContain(`${ESC}[2J`);
    const dir = await onlyRunDir(root);
    expect(await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8')).toBe(PRINTED);
  });
});

describe('an agent run whose model answers with hostile text', () => {
  it('prints the answer with its line feeds and nothing else raw; --json is exact', async () => {
    const repo = await scratch.sampleRepo();
    const answer = `line 1\nline 2 ${TITLE} \u202e${ESC}[1A\rdeny`;
    const script = await scratch.file(
      'hostile-answer.json',
      JSON.stringify({
        turns: [{ tool_calls: [{ name: HOSTILE.tool, input: {} }] }, { text: answer }],
      }),
    );
    const args = (root: string, extra: string[] = []): string[] => [
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--prompt',
      'p',
      '--script',
      script,
      ...extra,
    ];
    const root = scratch.path('art-agent');
    const r = await cfh(args(root));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toBe('line 1\nline 2 \\x1b]0;pwned\\x1b\\ \\u{202e}\\x1b[1A\\rdeny\n');
    const dir = await onlyRunDir(root);
    const show = await cfh(['runs', 'show', runIdOf(dir), '--artifact-root', root]);
    expectNoRawControls(show.stdout);
    expect(show.stdout).toContain('"\\u001b[2Kread_file\\u{202e}" rejected');
    expect((await readEvents(dir)).some((e) => e.data.tool === HOSTILE.tool)).toBe(true);

    const json = await cfh(args(scratch.path('art-agent-json'), ['--json']));
    expect((JSON.parse(json.stdout) as { finalAnswer: string }).finalAnswer).toBe(answer);
  });
});
