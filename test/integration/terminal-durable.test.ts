// AH-LIFE-2: the terminal state and the last accepted event are durable before the caller
// hears that the run ended. A kill -9 cannot show it (the page cache survives the process),
// so the test watches the kernel: cfh runs under strace, and the order of its system calls
// must be: `run_finished` written to events.jsonl, then that file synced, then report.json
// and state.json each written to a temporary file, synced, renamed into place and the run
// directory synced, and only then a byte to the caller's stdout or stderr. State.json may
// not cite the event before the event is on disk.
import { execa } from 'execa';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseEnv, CFH_MAIN, onlyRunDir, REPO_ROOT, useScratch } from './helpers.js';

const scratch = useScratch('durable');

interface Call {
  readonly name: string;
  readonly args: string;
  readonly ret: string;
  /** Trace lines where the call entered and returned (a call other threads interleave spans two). */
  readonly start: number;
  readonly end: number;
}

// strace -f -y: `PID name(args) = ret`, or `PID name(args <unfinished ...>` then
// `PID <... name resumed>args) = ret` when another thread's call came between.
function parseTrace(text: string): Call[] {
  const calls: Call[] = [];
  const open = new Map<string, { name: string; args: string; start: number }>();
  text.split('\n').forEach((line, i) => {
    const resumed = /^(\d+)\s+<\.\.\. (\w+) resumed>(.*)\)\s+= (.*)$/.exec(line);
    if (resumed !== null) {
      const [, pid = '', , rest = '', ret = ''] = resumed;
      const entered = open.get(pid);
      if (entered !== undefined) calls.push({ ...entered, args: entered.args + rest, ret, end: i });
      open.delete(pid);
      return;
    }
    const unfinished = /^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$/.exec(line);
    if (unfinished !== null) {
      const [, pid = '', name = '', args = ''] = unfinished;
      open.set(pid, { name, args, start: i });
      return;
    }
    const whole = /^(\d+)\s+(\w+)\((.*)\)\s+= (.*)$/.exec(line);
    if (whole !== null) {
      const [, , name = '', args = '', ret = ''] = whole;
      calls.push({ name, args, ret, start: i, end: i });
    }
  });
  return calls.sort((a, b) => a.start - b.start);
}

/** The path strace -y prints beside a call's first argument, a descriptor. */
const fdPath = (c: Call): string | undefined => /^\d+<(.*?)>/.exec(c.args)?.[1];
const fdNumber = (c: Call): string | undefined => /^(\d+)</.exec(c.args)?.[1];
const isWrite = (c: Call): boolean => /^(p?writev?|pwritev2|pwrite64)$/.test(c.name);
const isSync = (c: Call): boolean => c.name === 'fsync' || c.name === 'fdatasync';

function must<T>(value: T | undefined, what: string): T {
  expect(value, what).toBeDefined();
  return value as T;
}

/** A document's last atomic replacement: written to a temporary file, synced, renamed, the directory synced. */
function replaced(calls: readonly Call[], runDir: string, doc: string) {
  const target = path.join(runDir, doc);
  const rename = must(
    calls
      .filter((c) => c.name.startsWith('rename') && c.ret.startsWith('0'))
      .filter((c) => [...c.args.matchAll(/"([^"]*)"/g)].at(-1)?.[1] === target)
      .at(-1),
    `${doc} renamed into place`,
  );
  const temp = must(/"([^"]*)"/.exec(rename.args)?.[1], `${doc}'s temporary file`);
  const writes = calls.filter((c) => isWrite(c) && fdPath(c) === temp);
  const lastWrite = must(writes.at(-1), `${doc} written`);
  const synced = must(
    calls.find((c) => isSync(c) && fdPath(c) === temp && c.start > lastWrite.end),
    `${doc}'s temporary file synced after its last write`,
  );
  const dirSynced = must(
    calls.find((c) => isSync(c) && fdPath(c) === runDir && c.start > rename.end),
    `the run directory synced after ${doc} was renamed`,
  );
  return { text: writes.map((c) => c.args).join(''), synced, rename, dirSynced };
}

/** `cfh sandbox run ARGS` under strace, its evidence under a fresh artifact root. */
async function tracedRun(name: string, args: readonly string[]) {
  const root = scratch.path(`art-${name}`);
  const trace = scratch.path(`${name}.trace`);
  const strace = [
    ...['-f', '-y', '-qq', '-s', '400', '-o', trace],
    ...['-e', 'trace=write,writev,pwrite64,pwritev,fsync,fdatasync,rename,renameat,renameat2'],
  ];
  const r = await execa(
    'strace',
    [...strace, process.execPath, CFH_MAIN, 'sandbox', 'run', '--artifact-root', root, ...args],
    { reject: false, extendEnv: false, env: baseEnv(), cwd: REPO_ROOT },
  );
  const runDir = await onlyRunDir(root);
  return { r, runDir, calls: parseTrace(await readFile(trace, 'utf8')) };
}

function expectDurableBeforeTold(calls: readonly Call[], runDir: string, status: string): void {
  const events = path.join(runDir, 'events.jsonl');
  const finished = must(
    calls.find(
      (c) => isWrite(c) && fdPath(c) === events && c.args.includes('\\"type\\":\\"run_finished\\"'),
    ),
    'run_finished written',
  );
  const eventSynced = must(
    calls.find((c) => isSync(c) && fdPath(c) === events && c.start > finished.end),
    'events.jsonl synced after run_finished',
  );
  const report = replaced(calls, runDir, 'report.json');
  const state = replaced(calls, runDir, 'state.json');
  expect(report.text).toContain(`\\"status\\": \\"${status}\\"`);
  expect(state.text).toContain(`\\"state\\": \\"${status}\\"`);
  // Both documents cite run_finished: neither is in place before the event is on disk.
  expect(eventSynced.end).toBeLessThan(report.rename.start);
  expect(eventSynced.end).toBeLessThan(state.rename.start);
  for (const doc of [report, state]) expect(doc.synced.end).toBeLessThan(doc.rename.start);
  // The caller hears nothing of the end (stdout or stderr) before all of it is durable.
  const told = must(
    calls.find(
      (c) => isWrite(c) && ['1', '2'].includes(fdNumber(c) ?? '') && c.start > finished.end,
    ),
    'something told to the caller after run_finished',
  );
  for (const durable of [eventSynced, report.dirSynced, state.dirSynced])
    expect(durable.end).toBeLessThan(told.start);
}

describe('terminal state durable before it is reported (AH-LIFE-2)', () => {
  it('a command run: run_finished, report.json and state.json synced before the end line', async () => {
    const ws = await scratch.sampleRepo();
    const { r, runDir, calls } = await tracedRun('command', ['--workspace', ws, '--', 'true']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/completed \(exit 0\); evidence in /);
    expectDurableBeforeTold(calls, runDir, 'completed');
  });

  it('an agent run: the same before its answer reaches stdout', async () => {
    const repo = await scratch.sampleRepo();
    const { r, runDir, calls } = await tracedRun('agent', [
      ...['--workspace', repo, '--prompt', 'list the files'],
    ]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).not.toBe('');
    expectDurableBeforeTold(calls, runDir, 'completed');
  });
});
