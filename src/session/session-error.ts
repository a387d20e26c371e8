// What a session refuses: a turn while one runs (AH-INT-2), a call on a closed session, a
// restore that does not match or whose evidence does not verify (AH-INT-4). The caller
// gets the code (error-codes.ts) in the protocol's error data.
import { CfhError, type ErrorCode } from '../errors.js';

export class SessionError extends CfhError {
  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    hint?: string,
  ) {
    super(code, message, { boundary: 'harness', details, hint, exitCode: 1 });
  }
}
