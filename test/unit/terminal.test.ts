import { describe, expect, it } from 'vitest';
import {
  CancelRequest,
  EXIT_OOM,
  EXIT_SIGINT,
  EXIT_SIGTERM,
  EXIT_WALL_TIME,
  cancelSignalOf,
  decideTerminal,
} from '../../src/engine/terminal.js';

describe('decideTerminal', () => {
  it('exit 0 completes as exited with status 0', () => {
    expect(decideTerminal({ kind: 'exited' }, 0, false)).toEqual({
      status: 'completed',
      reason: 'exited',
      exitCode: 0,
    });
  });

  it('a non-zero exit still completes, passing the status through', () => {
    expect(decideTerminal({ kind: 'exited' }, 3, false)).toEqual({
      status: 'completed',
      reason: 'exited_nonzero',
      exitCode: 3,
    });
  });

  it('wall time fails with limit_reached:wall_time and 124', () => {
    expect(decideTerminal({ kind: 'wall_time', limitMs: 1000 }, 137, false)).toEqual({
      status: 'failed',
      reason: 'limit_reached:wall_time',
      exitCode: 124,
    });
    expect(EXIT_WALL_TIME).toBe(124);
  });

  it('wall time wins over an OOM kill seen while stopping', () => {
    expect(decideTerminal({ kind: 'wall_time', limitMs: 1000 }, 137, true).reason).toBe(
      'limit_reached:wall_time',
    );
  });

  it('an OOM kill fails with limit_reached:memory and 137, whatever the command exit', () => {
    for (const exit of [137, 0, 1]) {
      expect(decideTerminal({ kind: 'exited' }, exit, true)).toEqual({
        status: 'failed',
        reason: 'limit_reached:memory',
        exitCode: 137,
      });
    }
    expect(EXIT_OOM).toBe(137);
  });

  it('SIGINT cancels with 130', () => {
    expect(decideTerminal({ kind: 'cancelled', signal: 'SIGINT' }, 0, false)).toEqual({
      status: 'cancelled',
      reason: 'cancelled:SIGINT',
      exitCode: 130,
    });
    expect(EXIT_SIGINT).toBe(130);
  });

  it('SIGTERM cancels with 143', () => {
    expect(decideTerminal({ kind: 'cancelled', signal: 'SIGTERM' }, 0, true)).toEqual({
      status: 'cancelled',
      reason: 'cancelled:SIGTERM',
      exitCode: 143,
    });
    expect(EXIT_SIGTERM).toBe(143);
  });

  it('a plain abort cancels with 130', () => {
    expect(decideTerminal({ kind: 'cancelled', signal: 'abort' }, 1, false)).toEqual({
      status: 'cancelled',
      reason: 'cancelled:abort',
      exitCode: 130,
    });
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
