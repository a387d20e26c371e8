// What a run says when it ends, as pure logic: the event log's subscriber sees each record
// exactly as appended; the tally of blocked calls; the summary line's wording; the event
// stream's bytes (exact into a pipe, escaped on a terminal, stopped when nobody reads);
// the line a command left open. The real runs are in integration/run-said.test.ts and
// integration/run-events.test.ts.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventLog, type EventRecord } from '../../src/evidence/event-log.js';
import { BlockedCalls } from '../../src/engine/agent/blocked-calls.js';
import { decideTerminal } from '../../src/engine/run/terminal.js';
import { EVENT_BUFFER_BYTES, streamPrinter } from '../../src/cli/print.js';
import { eventStream, runEndLine, type RunEnding } from '../../src/cli/run-said.js';
import { makeTempDir, removeTempDir } from './helpers.js';

const RUN_ID = '20240102T030405Z-0123abcd';
let tmp: string | undefined;

beforeEach(async () => {
  tmp = await makeTempDir('cfh-run-said-');
});
afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function file(): string {
  if (tmp === undefined) throw new Error('no temp dir');
  return path.join(tmp, 'events.jsonl');
}

function record(type: string, data: Record<string, unknown>, seq = 1): EventRecord {
  return { seq, ts: '', runId: RUN_ID, type, data, prevHash: '', hash: '' };
}

describe('EventLog.subscribe', () => {
  it('sees every record once, in order, as the bytes the file holds', async () => {
    const log = await EventLog.create(file(), RUN_ID);
    const lines: string[] = [];
    log.subscribe((line) => lines.push(line));
    // Appended without awaiting each: the chain still orders them.
    await Promise.all([
      log.append('run_created', { kind: 'command', profile: 'p', imageId: 'sha256:x' }, true),
      log.append('container_started', { containerId: 'c' }),
      log.append('container_removed', { containerId: 'c' }, true),
    ]);
    await log.close();
    expect(lines.join('')).toBe(await readFile(file(), 'utf8'));
    expect(lines.map((l) => (JSON.parse(l) as { seq: number }).seq)).toEqual([1, 2, 3]);
  });

  it('a record is seen only once it is in the file; a refused one never', async () => {
    const log = await EventLog.create(file(), RUN_ID);
    const inFile: boolean[] = [];
    log.subscribe((line) => {
      // Synchronous check: the bytes are already there when the listener runs.
      inFile.push(true);
      expect(line.endsWith('\n')).toBe(true);
    });
    await log.append('container_started', { containerId: 'c' });
    await expect(
      log.append('container_started', { containerId: 1 } as unknown as { containerId: string }),
    ).rejects.toThrow(/does not match its schema/);
    await log.close();
    expect(inFile).toHaveLength(1);
  });

  it('a listener that throws is dropped; the log and the other listeners go on', async () => {
    const log = await EventLog.create(file(), RUN_ID);
    const seen: string[] = [];
    log.subscribe(() => {
      throw new Error('consumer broke');
    });
    log.subscribe((_l, r) => seen.push(r.type));
    await log.append('container_started', { containerId: 'c' });
    await log.append('container_removed', { containerId: 'c' });
    await log.close();
    expect(seen).toEqual(['container_started', 'container_removed']);
    expect((await readFile(file(), 'utf8')).split('\n')).toHaveLength(3);
  });
});

describe('BlockedCalls', () => {
  const ref = (n: number, tool = 'exec') => ({
    callId: `call-000${String(n)}`,
    toolUseId: `t${String(n)}`,
    tool,
  });

  it('counts policy and human refusals, calls nobody approved, and tools outside the surface', () => {
    const b = new BlockedCalls();
    b.listener(
      '',
      record('tool_denied', { ...ref(1), rule: 'r1', decision: 'deny', status: 'denied' }),
    );
    b.listener(
      '',
      record('tool_denied', {
        ...ref(2),
        rule: 'r2',
        decision: 'approval_required',
        status: 'approval_required',
      }),
    );
    b.listener('', record('tool_rejected', { ...ref(3, 'nope'), reason: 'unknown_tool' }));
    // Not blocked: the model is told and may correct its arguments.
    b.listener('', record('tool_rejected', { ...ref(4), reason: 'invalid_arguments' }));
    // Not a refusal at all, and a record that breaks its schema is not counted either.
    b.listener('', record('tool_requested', { ...ref(5), input: '{}' }));
    b.listener('', record('tool_denied', { ...ref(6), rule: '', decision: 'deny' }));
    expect(b.summary()).toEqual({
      denied: 2,
      unapproved: 1,
      calls: [
        { callId: 'call-0001', tool: 'exec', rule: 'r1', decision: 'deny', status: 'denied' },
        {
          callId: 'call-0002',
          tool: 'exec',
          rule: 'r2',
          decision: 'approval_required',
          status: 'approval_required',
        },
        {
          callId: 'call-0003',
          tool: 'nope',
          rule: 'unknown_tool',
          decision: 'deny',
          status: 'denied',
        },
      ],
    });
  });

  it('in a planning run, the mutations planning mode refuses do not fail it; other refusals do', () => {
    const b = new BlockedCalls();
    b.listener(
      '',
      record('tool_denied', {
        ...ref(1),
        rule: 'planning_mode',
        decision: 'deny',
        status: 'denied',
      }),
    );
    expect(b.failing('plan').calls).toEqual([]);
    expect(b.failing('run').denied).toBe(1);
    b.listener('', record('tool_rejected', { ...ref(2, 'x'), reason: 'unknown_tool' }));
    expect(b.failing('plan')).toMatchObject({ denied: 1, unapproved: 0 });
    expect(b.summary().denied).toBe(2);
  });

  it('a blocked end is a failed run, exit 1, reason blocked_calls', () => {
    expect(decideTerminal({ kind: 'blocked', denied: 1, unapproved: 0 })).toEqual({
      status: 'failed',
      reason: 'blocked_calls',
      exitCode: 1,
    });
  });
});

describe('runEndLine', () => {
  const base: RunEnding = {
    runId: RUN_ID,
    status: 'completed',
    terminalReason: 'exited',
    exitCode: 0,
    artifactDir: `/runs/${RUN_ID}`,
    patch: null,
  };
  const patch = (changes: number, heldBack: string[] = []) => ({
    changes,
    heldBack,
    added: changes,
    modified: 0,
    removed: 0,
    mode: 0,
    notApplied: 0,
    file: 'patch/patch.json',
    diff: 'patch/patch.diff',
    files: [],
    filesOmitted: 0,
  });

  it('says the id, the end and the evidence; a failure names its reason', () => {
    expect(runEndLine('command', base, undefined)).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}`,
    );
    expect(
      runEndLine(
        'command',
        { ...base, status: 'failed', terminalReason: 'limit_reached:wall_time', exitCode: 124 },
        undefined,
      ),
    ).toBe(
      `cfh: run ${RUN_ID} failed (limit_reached:wall_time, exit 124); evidence in /runs/${RUN_ID}`,
    );
  });

  it('a draft: the changes waiting and the commands, with the root a shell takes as one word', () => {
    expect(runEndLine('command', { ...base, patch: patch(1) }, "/tmp/it's here")).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}; 1 change waiting: cfh runs diff ${RUN_ID} --artifact-root '/tmp/it'\\''s here', cfh runs apply ${RUN_ID} --artifact-root '/tmp/it'\\''s here'`,
    );
    expect(runEndLine('command', { ...base, patch: patch(0) }, undefined)).toMatch(
      /; no changes in the draft$/,
    );
  });

  it('class 9: a draft says what an apply holds back, and that each path must be named', () => {
    expect(
      runEndLine('command', { ...base, patch: patch(1, ['.envrc', '.git/hooks/x']) }, undefined),
    ).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}; 1 change waiting, 2 held back (.envrc, .git/hooks/x: paths your tools obey; name each with --host-obeyed PATH): cfh runs diff ${RUN_ID}, cfh runs apply ${RUN_ID}`,
    );
    expect(runEndLine('command', { ...base, patch: patch(0, ['.envrc']) }, undefined)).toMatch(
      /; 0 changes waiting, 1 held back \(/,
    );
  });

  it('class 9: an rw run says loudly what it planted that a host tool obeys, and nothing when it planted nothing', () => {
    const report = (
      changed: number,
      paths: string[],
      mode: 'ro' | 'rw' = 'ro',
      complete = true,
    ) => ({
      mode,
      changed,
      paths,
      entries: changed,
      complete,
    });
    expect(runEndLine('command', { ...base, hostObeyed: report(0, []) }, undefined)).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}`,
    );
    expect(
      runEndLine('command', { ...base, hostObeyed: report(2, ['.git', 'deep/.envrc']) }, undefined),
    ).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}; WARNING: the sandbox created or changed 2 paths your tools obey (.git, deep/.envrc): a tool run there on the host obeys them; look before you use git or open the folder there (cfh runs show ${RUN_ID})`,
    );
    const many = Array.from({ length: 7 }, (_, i) => `d${String(i)}/.envrc`);
    expect(runEndLine('command', { ...base, hostObeyed: report(9, many) }, undefined)).toContain(
      '9 paths your tools obey (d0/.envrc, d1/.envrc, d2/.envrc, d3/.envrc, d4/.envrc, 4 more)',
    );
    expect(
      runEndLine('command', { ...base, hostObeyed: report(1, ['.envrc'], 'rw') }, undefined),
    ).toMatch(
      /; the sandbox created or changed 1 path your tools obey \(\.envrc\), as --host-obeyed rw allows$/,
    );
    expect(
      runEndLine('command', { ...base, hostObeyed: report(0, [], 'ro', false) }, undefined),
    ).toMatch(
      /WARNING: the end walk of the rw mounts did not reach every entry \(a bound, or a directory it could not list\)/,
    );
  });

  it('an agent run: denied and unapproved calls, each wording only when there are some', () => {
    const blocked = (denied: number, unapproved: number) => ({
      denied,
      unapproved,
      calls: Array.from({ length: denied + unapproved }, (_, i) => ({
        callId: `call-000${String(i + 1)}`,
        tool: 'exec',
        rule: 'r',
        decision: 'deny' as const,
        status: i < denied ? ('denied' as const) : ('approval_required' as const),
      })),
    });
    const line = (d: number, u: number) =>
      runEndLine('agent', { ...base, blocked: blocked(d, u) }, undefined);
    expect(line(2, 1)).toBe(
      `cfh: agent run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}; 2 calls denied, 1 left unapproved (cfh runs show ${RUN_ID})`,
    );
    expect(line(0, 1)).toMatch(/; 1 call left unapproved \(cfh runs show /);
    expect(line(1, 0)).toMatch(/; 1 call denied \(cfh runs show /);
    expect(line(0, 0)).toBe(
      `cfh: agent run ${RUN_ID} completed (exit 0); evidence in /runs/${RUN_ID}`,
    );
  });

  it('reaches the terminal escaped, whatever it holds', () => {
    const stderr = new PassThrough();
    const printer = streamPrinter(new PassThrough(), stderr);
    printer.err(
      runEndLine('command', { ...base, artifactDir: '/r/\u001b]0;x\u0007\n\u202e' }, undefined),
    );
    const said = (stderr.read() as Buffer).toString();
    expect(said).toBe(
      `cfh: run ${RUN_ID} completed (exit 0); evidence in /r/\\x1b]0;x\\x07\\n\\u{202e}\n`,
    );
  });
});

describe('the event stream on stdout', () => {
  const line = `${JSON.stringify({ seq: 1, type: 'tool_requested', data: { input: 'a\u009b2J\u202eb\u2028' } })}\n`;

  it('into a pipe or a file: the exact bytes', () => {
    const stdout = new PassThrough();
    const printer = streamPrinter(stdout, new PassThrough());
    eventStream(printer)(line, record('x', {}));
    expect((stdout.read() as Buffer).toString()).toBe(line);
  });

  it('on a terminal: JSON escapes for what would drive it, still the same value', () => {
    const tty = Object.assign(new PassThrough(), { isTTY: true });
    const printer = streamPrinter(tty, new PassThrough());
    eventStream(printer)(line, record('x', {}));
    const shown = (tty.read() as Buffer).toString();
    expect(shown).toBe(
      '{"seq":1,"type":"tool_requested","data":{"input":"a\\u009b2J\\u202eb\\u2028"}}\n',
    );
    expect(JSON.parse(shown)).toEqual(JSON.parse(line));
  });

  it('a reader that stopped reading: the stream stops, says so once, and keeps a prefix', () => {
    const stdout = new PassThrough({ highWaterMark: 16 });
    const stderr = new PassThrough();
    const listen = eventStream(streamPrinter(stdout, stderr));
    const big = `${'x'.repeat(1024 * 1024)}\n`;
    const rounds = Math.ceil(EVENT_BUFFER_BYTES / big.length) + 3;
    for (let i = 0; i < rounds; i += 1) listen(big, record('x', {}));
    expect(stdout.writableLength).toBeLessThanOrEqual(EVENT_BUFFER_BYTES + big.length);
    const said = (stderr.read() as Buffer).toString();
    expect(said.match(/no more events are streamed/g)).toHaveLength(1);
  });
});

describe('the line a command left open', () => {
  it('is ended before cfh speaks; a closed one is left alone; stdout counts only on a shared screen', async () => {
    const write = (s: NodeJS.WritableStream, text: string) =>
      new Promise<void>((resolve) => {
        s.write(Buffer.from(text), () => {
          resolve();
        });
      });
    const stderr = new PassThrough();
    const live = streamPrinter(new PassThrough(), stderr).liveOutput();
    await write(live.stderr, 'half');
    live.endLine();
    expect((stderr.read() as Buffer).toString()).toBe('half\n');
    await write(live.stderr, 'whole\n');
    live.endLine();
    expect((stderr.read() as Buffer).toString()).toBe('whole\n');
    // A pipe on stdout is not the screen stderr is on.
    const out = new PassThrough();
    const live2 = streamPrinter(out, stderr).liveOutput();
    await write(live2.stdout, 'no newline');
    live2.endLine();
    expect(stderr.read()).toBeNull();
    expect((out.read() as Buffer).toString()).toBe('no newline');
    // Both on the terminal: the open stdout line is ended on stderr.
    const ttyOut = Object.assign(new PassThrough(), { isTTY: true });
    const ttyErr = Object.assign(new PassThrough(), { isTTY: true });
    const live3 = streamPrinter(ttyOut, ttyErr).liveOutput();
    await write(live3.stdout, 'prompt> ');
    live3.endLine();
    expect((ttyErr.read() as Buffer).toString()).toBe('\n');
  });
});
