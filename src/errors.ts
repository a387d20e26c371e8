// The one error hierarchy. Every failure cfh reports carries a stable `code` from the
// closed registry (error-codes.ts), the boundary that failed (AH-DIAG-1) and the process
// exit status it maps to.
import type { ErrorCode } from './error-codes.js';

export type { ErrorCode } from './error-codes.js';

/**
 * The boundaries a failure can name (AH-DIAG-1), one list for the errors and for the audit
 * that checks a report names one: `model-gateway` (the provider: HTTP, stream, timeouts,
 * auth, a scripted replay run dry), `mediator` (a decision or its record broke an
 * invariant, or the approval surface failed).
 */
export const FAILING_BOUNDARIES = [
  'configuration',
  'sandbox',
  'engine',
  'artifact-store',
  'image',
  'harness',
  'model-gateway',
  'mediator',
  'workspace',
  'tool',
] as const;

export type FailingBoundary = (typeof FAILING_BOUNDARIES)[number];

/** Exit status when cfh could not start the command (mirrors `docker run`'s 125). */
export const EXIT_CANNOT_START = 125;

export class CfhError extends Error {
  readonly code: ErrorCode;
  readonly boundary: FailingBoundary;
  readonly details: Readonly<Record<string, unknown>>;
  readonly exitCode: number;
  /**
   * What to do about it, shown after the message: `cfh: WHAT; HINT` (cli/report-failure.ts).
   * Kept apart from the message so WHAT stays one clause and evidence records WHAT alone.
   */
  readonly hint: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      boundary: FailingBoundary;
      details?: Record<string, unknown>;
      cause?: unknown;
      exitCode?: number;
      hint?: string | undefined;
    },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.boundary = options.boundary;
    this.details = options.details ?? {};
    this.exitCode = options.exitCode ?? EXIT_CANNOT_START;
    this.hint = options.hint;
  }
}

/** Bad input: a profile, a flag, a mount. Always raised before any engine object exists. */
export class ConfigError extends CfhError {
  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    hint?: string,
  ) {
    super(code, message, { boundary: 'configuration', details, hint });
  }
}

/** The engine could not be reached or refused a request. */
export class EngineError extends CfhError {
  readonly statusCode: number | undefined;
  constructor(
    code: ErrorCode,
    message: string,
    options: {
      statusCode?: number;
      cause?: unknown;
      details?: Record<string, unknown>;
      hint?: string;
    } = {},
  ) {
    super(code, message, {
      boundary: 'engine',
      cause: options.cause,
      details: options.details ?? {},
      hint: options.hint,
    });
    this.statusCode = options.statusCode;
  }
}

export class EngineUnavailableError extends EngineError {}
export class ImageNotFoundError extends EngineError {}
export class ContainerNotFoundError extends EngineError {}

/**
 * The containment boundary did not hold as checked (AH-TOOL-6, AH-DIAG-1): what the engine
 * mounted is not what cfh checked, a mount source changed, a tool container vanished. The
 * run fails (boundary `sandbox`); the model is never told.
 */
export class ContainmentError extends CfhError {
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { boundary: 'sandbox', details });
  }
}

/** A harness invariant broke mid-run (AH-TOOL-6): the run fails, the model is not told. */
export class HarnessInvariantError extends CfhError {
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { boundary: 'harness', details, exitCode: 1 });
  }
}

/**
 * Mediation failed (AH-DIAG-1, boundary `mediator`): a governance record broke the
 * extension's invariants, a call reached execution without the mediator's authorization,
 * or the approval surface failed while a person was asked. The run fails (exit 1); the
 * model is never told.
 */
export class MediatorError extends CfhError {
  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    cause?: unknown,
  ) {
    super(code, message, { boundary: 'mediator', details, cause, exitCode: 1 });
  }
}

/**
 * A host tool's channel failed (AH-TOOL-6, AH-DIAG-1): its server would not start, broke the
 * protocol, or exited; a declared tool is missing or cannot be validated. The run fails
 * (boundary `tool`): 125 before the first model request, 1 after it. The message is cfh's
 * own words with every credential scrubbed; the model is never told.
 */
export class HostToolError extends CfhError {
  constructor(code: ErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message, { boundary: 'tool', details });
  }
}

export class ArtifactError extends CfhError {
  constructor(code: ErrorCode, message: string, cause?: unknown) {
    super(code, message, { boundary: 'artifact-store', cause });
  }
}

/**
 * A draft workspace could not be prepared, or its patch could not be applied to the host
 * (governance extension, "Draft vs commit policy"): a refused apply changes nothing.
 */
export class WorkspaceError extends CfhError {
  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    cause?: unknown,
  ) {
    super(code, message, { boundary: 'workspace', details, cause, exitCode: 1 });
  }
}

export class ImageBuildError extends CfhError {
  constructor(message: string, cause?: unknown) {
    super('image_build_failed', message, { boundary: 'image', cause, exitCode: 1 });
  }
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
