// Starting the guard: ready only on its GUARD_READY line (rules committed); a guard whose
// script stops before that line fails the set-up with what it said (fail closed).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GUARD_READY } from '../../src/network/guard-rules.js';
import { startGuard } from '../../src/sandbox/guard-start.js';
import type { CreatedGuard, GuardProcess } from '../../src/substrate/runtime.js';

function fakeGuard(): { guard: CreatedGuard; stdout: PassThrough; closed: () => boolean } {
  const stdout = new PassThrough();
  let closed = false;
  const proc: GuardProcess = {
    stdin: new PassThrough(),
    stdout,
    close: () => {
      closed = true;
    },
  };
  const guard: CreatedGuard = {
    id: 'guard-id',
    start: () => Promise.resolve(proc),
    remove: () => Promise.resolve(),
    [Symbol.asyncDispose]: () => Promise.resolve(),
  };
  return { guard, stdout, closed: () => closed };
}

describe('startGuard', () => {
  it('resolves only once the ready line arrives, and leaves what follows to the reader', async () => {
    const { guard, stdout } = fakeGuard();
    let settled = false;
    const started = startGuard(guard).then((p) => {
      settled = true;
      return p;
    });
    stdout.write(GUARD_READY.slice(0, 4));
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    stdout.write(`${GUARD_READY.slice(4)}\n1 10.0.0.1 80\n`);
    const proc = await started;
    const rest = await new Promise<string>((resolve) => {
      proc.stdout.once('data', (c: Buffer) => {
        resolve(c.toString());
      });
      proc.stdout.resume();
    });
    expect(rest).toBe('1 10.0.0.1 80\n');
  });

  it('fails with egress_rules_failed and the output when the script ends before the line', async () => {
    const { guard, stdout, closed } = fakeGuard();
    const started = startGuard(guard);
    stdout.end('iptables-restore: line 3 failed\n');
    await expect(started).rejects.toMatchObject({
      code: 'egress_rules_failed',
      message: expect.stringContaining('line 3 failed') as unknown,
    });
    expect(closed()).toBe(true);
  });

  it('fails when aborted before the line, and closes the process', async () => {
    const { guard, closed } = fakeGuard();
    const controller = new AbortController();
    const started = startGuard(guard, controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(started).rejects.toThrow('cancelled');
    expect(closed()).toBe(true);
  });
});
