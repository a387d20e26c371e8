// What cfh sends the call supervisor and what it takes back (src/tools/call-supervisor.ts),
// as pure logic: the supervisor's own env blanks every variable of the call's (a profile's
// LD_PRELOAD never reaches it) and the request carries them for the command; a report counts
// only whole, from an exec that exited 0, in the schema's shape. The supervisor itself runs
// against the real engine in integration/call-supervisor.test.ts.
import { describe, expect, it } from 'vitest';
import {
  STOP_BOUND_MS,
  printed,
  readReport,
  reportBytes,
  supervisedExec,
} from '../../src/tools/call-supervisor.js';

/** The request as the supervisor reads it: the head's fields, the netstrings, the stdin. */
function request(stdin: Buffer): { head: string[]; strings: string[]; payload: Buffer } {
  const nl = stdin.indexOf(0x0a);
  const head = stdin.subarray(0, nl).toString('utf8').split(' ');
  const strings: string[] = [];
  let at = nl + 1;
  for (let n = Number(head[5]) + 2 * Number(head[6]); n > 0; n -= 1) {
    const colon = stdin.indexOf(0x3a, at);
    const size = Number(stdin.subarray(at, colon).toString());
    strings.push(stdin.subarray(colon + 1, colon + 1 + size).toString('utf8'));
    expect(stdin[colon + 1 + size]).toBe(0x2c);
    at = colon + 2 + size;
  }
  return { head, strings, payload: stdin.subarray(at) };
}

const captured = (text: string) => ({
  data: Buffer.from(text).toString('base64'),
  bytes: text.length,
  truncated: false,
});

const RAN = {
  exit: 0,
  signal: null,
  timedOut: false,
  stopped: null,
  stdout: captured('out\n'),
  stderr: captured(''),
};

describe('supervisedExec', () => {
  it("blanks the call's env for the supervisor and hands it to the command", () => {
    const env = { LD_PRELOAD: '/workspace/x.so', PATH: '/workspace/bin:/usr/bin' };
    const exec = supervisedExec({
      argv: ['sh', '-c', 'echo hi'],
      env,
      timeoutMs: 2500.4,
      maxOutputBytes: 1000,
      stdin: Buffer.from('{"op":"read"}'),
    });
    expect(exec.argv.slice(0, 5)).toEqual(['/usr/bin/python3', '-I', '-S', '-B', '-c']);
    expect(exec.env).toEqual({ LD_PRELOAD: '', PATH: '' });
    const { head, strings, payload } = request(exec.stdin);
    expect(head).toEqual(['cfh-call/1', '2500', String(STOP_BOUND_MS), '1000', '13', '3', '2']);
    expect(strings).toEqual([
      ...['sh', '-c', 'echo hi'],
      ...['LD_PRELOAD', '/workspace/x.so', 'PATH', '/workspace/bin:/usr/bin'],
    ]);
    expect(payload.toString()).toBe('{"op":"read"}');
  });

  it('says there is no stdin, and passes a lone surrogate as the engine did (U+FFFD)', () => {
    const exec = supervisedExec({
      argv: ['echo', 'a\ud800b', 'x:y,z'],
      env: {},
      timeoutMs: 1000,
      maxOutputBytes: 10,
    });
    const { head, strings, payload } = request(exec.stdin);
    expect(head.slice(4)).toEqual(['-', '3', '0']);
    expect(strings).toEqual(['echo', 'a\ufffdb', 'x:y,z']);
    expect(payload.length).toBe(0);
  });
});

describe('readReport', () => {
  const out = (o: unknown) => Buffer.from(`${JSON.stringify(o)}\n`);

  it('takes a whole report of either shape', () => {
    expect(readReport(0, out(RAN), false)).toEqual(RAN);
    const stopped = {
      ...RAN,
      exit: 137,
      signal: 9,
      timedOut: true,
      stopped: { why: 'timeout', session: 12, processes: 4, ms: 3.2, gone: true },
    };
    expect(readReport(0, out(stopped), false)).toEqual(stopped);
    const setup = { setup: 'seccomp: EINVAL', stdout: captured(''), stderr: captured('') };
    expect(readReport(0, out(setup), false)).toEqual(setup);
  });

  it('refuses anything else: another exit, a cut stream, a forged or partial report', () => {
    expect(readReport(1, out(RAN), false)).toBeUndefined();
    expect(readReport(0, out(RAN), true)).toBeUndefined();
    expect(readReport(0, Buffer.from('{"exit": 0'), false)).toBeUndefined();
    expect(readReport(0, Buffer.concat([Buffer.from('forged'), out(RAN)]), false)).toBeUndefined();
    expect(readReport(0, out({ ...RAN, extra: true }), false)).toBeUndefined();
    const notB64 = { ...RAN, stdout: { data: '$$$', bytes: 1, truncated: false } };
    expect(readReport(0, out(notB64), false)).toBeUndefined();
  });

  it('decodes what the command printed, and bounds the stream it arrives on', () => {
    expect(printed(captured('é\n'))).toEqual({ bytes: Buffer.from('é\n'), truncated: false });
    // Both streams at their bound in base64, and the report's own fields.
    expect(reportBytes(3000)).toBe(4000 * 2 + 64 * 1024);
  });
});
