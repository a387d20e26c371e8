// The one exit-status policy of both run kinds (src/engine/run/terminal.ts): every row of its
// table, so a change to any of them is a visible decision (AH-LIFE-1, AH-LIFE-4).
import { describe, expect, it } from 'vitest';
import { ConfigError, EngineError } from '../../src/errors.js';
import {
  CancelRequest,
  EXIT_FAILED_AFTER_START,
  EXIT_OOM,
  EXIT_SIGINT,
  EXIT_SIGTERM,
  EXIT_SIGHUP,
  cancelExit,
  EXIT_WALL_TIME,
  cancelSignalOf,
  decideTerminal,
} from '../../src/engine/run/terminal.js';

describe('decideTerminal', () => {
  it('exit 0 completes as exited with status 0', () => {
    expect(decideTerminal({ kind: 'exited', exitCode: 0 })).toEqual({
      status: 'completed',
      reason: 'exited',
      exitCode: 0,
    });
  });

  it('a non-zero exit still completes, passing the status through', () => {
    expect(decideTerminal({ kind: 'exited', exitCode: 3 })).toEqual({
      status: 'completed',
      reason: 'exited_nonzero',
      exitCode: 3,
    });
  });

  it('an agent answer completes with 0', () => {
    expect(decideTerminal({ kind: 'answered' })).toEqual({
      status: 'completed',
      reason: 'final_answer',
      exitCode: 0,
    });
  });

  it('wall time fails with limit_reached:wall_time and 124', () => {
    expect(decideTerminal({ kind: 'wall_time' })).toEqual({
      status: 'failed',
      reason: 'limit_reached:wall_time',
      exitCode: 124,
    });
    expect(EXIT_WALL_TIME).toBe(124);
  });

  it("an agent's wall-time budget is the same failure: 124", () => {
    expect(decideTerminal({ kind: 'budget', budget: 'max_wall_time_seconds' })).toEqual({
      status: 'failed',
      reason: 'budget_exceeded:max_wall_time_seconds',
      exitCode: 124,
    });
  });

  it('any other budget fails with 1, naming the budget', () => {
    expect(decideTerminal({ kind: 'budget', budget: 'max_model_turns' })).toEqual({
      status: 'failed',
      reason: 'budget_exceeded:max_model_turns',
      exitCode: EXIT_FAILED_AFTER_START,
    });
  });

  it('an OOM kill fails with limit_reached:memory and 137', () => {
    expect(decideTerminal({ kind: 'memory' })).toEqual({
      status: 'failed',
      reason: 'limit_reached:memory',
      exitCode: 137,
    });
    expect(EXIT_OOM).toBe(137);
  });

  it('an error before the work started is 125; after it, 1', () => {
    const error = new EngineError('create_failed', 'x');
    expect(decideTerminal({ kind: 'error', error, started: false })).toEqual({
      status: 'failed',
      reason: 'error:create_failed',
      exitCode: 125,
    });
    expect(
      decideTerminal({
        kind: 'error',
        error: new ConfigError('invalid_profile', 'x'),
        started: true,
      }),
    ).toEqual({ status: 'failed', reason: 'error:invalid_profile', exitCode: 1 });
  });

  it('SIGINT cancels with 130, SIGTERM with 143, a plain abort with 130', () => {
    expect(decideTerminal({ kind: 'cancelled', signal: 'SIGINT' })).toEqual({
      status: 'cancelled',
      reason: 'cancelled:SIGINT',
      exitCode: 130,
    });
    expect(EXIT_SIGINT).toBe(130);
    expect(decideTerminal({ kind: 'cancelled', signal: 'SIGTERM' })).toEqual({
      status: 'cancelled',
      reason: 'cancelled:SIGTERM',
      exitCode: 143,
    });
    expect(EXIT_SIGTERM).toBe(143);
    expect(decideTerminal({ kind: 'cancelled', signal: 'abort' }).exitCode).toBe(130);
  });

  it('SIGHUP (the terminal went away) cancels like SIGTERM, with 129', () => {
    expect(decideTerminal({ kind: 'cancelled', signal: 'SIGHUP' })).toEqual({
      status: 'cancelled',
      reason: 'cancelled:SIGHUP',
      exitCode: 129,
    });
    expect(cancelExit('SIGHUP')).toBe(EXIT_SIGHUP);
    expect(cancelExit('SIGTERM')).toBe(143);
    expect(cancelExit('SIGINT')).toBe(130);
  });
});

describe('cancelSignalOf', () => {
  it('reads the signal from a CancelRequest reason', () => {
    const sigterm = new AbortController();
    sigterm.abort(new CancelRequest('SIGTERM'));
    expect(cancelSignalOf(sigterm.signal)).toBe('SIGTERM');
    const sigint = new AbortController();
    sigint.abort(new CancelRequest('SIGINT'));
    expect(cancelSignalOf(sigint.signal)).toBe('SIGINT');
  });

  it('calls any other reason an abort', () => {
    const controller = new AbortController();
    controller.abort(new Error('other'));
    expect(cancelSignalOf(controller.signal)).toBe('abort');
    expect(cancelSignalOf(AbortSignal.abort())).toBe('abort');
  });
});
