// Converts what dockerode throws into cfh's typed errors, at the substrate boundary.
import {
  ContainerNotFoundError,
  EngineError,
  EngineUnavailableError,
  ImageNotFoundError,
  errorMessage,
} from '../../errors.js';

interface DockerodeErrorShape {
  statusCode?: number;
  code?: string;
  json?: { message?: string } | null;
  reason?: string;
  /** A socket error's peer: the socket path, or the address with `port`. */
  address?: string;
  port?: number;
}

/** Where cfh looked for the engine, as the connect error names it. */
function engineAddress(e: DockerodeErrorShape): string {
  if (typeof e.address !== 'string') return 'its address';
  return typeof e.port === 'number' ? `${e.address}:${e.port}` : e.address;
}

/**
 * The engine could not be reached (docs/operators.md, "Errors"): one line naming where cfh
 * looked and how to start it. A refused or absent socket means nothing listens there; a
 * permission error means cfh's user may not use it.
 */
function unreachable(e: DockerodeErrorShape, operation: string, cause: unknown): EngineError {
  const where = engineAddress(e);
  const code = e.code ?? 'unknown';
  const denied = code === 'EACCES';
  return new EngineUnavailableError(
    'engine_unreachable',
    denied
      ? `the Docker engine at ${where} refuses cfh's user (${code})`
      : ['ENOENT', 'ECONNREFUSED'].includes(code)
        ? `no Docker engine answers at ${where} (${code})`
        : `the Docker engine at ${where} stopped answering (${code})`,
    {
      cause,
      details: { operation, address: where, errno: code },
      hint: denied
        ? 'run cfh as root or as a member of the docker group'
        : 'start it (scripts/engine-up.sh, or dockerd as root), or point DOCKER_HOST at a running engine',
    },
  );
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

/**
 * What dockerode threw, typed. A request the caller's signal aborted is not the engine's
 * failure: the abort passes through untyped, so the run that asked is cancelled (its
 * terminal state, 130/143), never failed with `engine_request_failed` (AH-LIFE-3).
 */
export function engineError(error: unknown, operation: string): Error {
  if (isAbort(error)) return error;
  if (error instanceof EngineError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as DockerodeErrorShape;
  const message = e.json?.message ?? e.reason ?? errorMessage(error);
  if (e.statusCode === undefined && e.code !== undefined && UNREACHABLE.has(e.code)) {
    return unreachable(e, operation, error);
  }
  const options = {
    cause: error,
    ...(e.statusCode === undefined ? {} : { statusCode: e.statusCode }),
  };
  if (e.statusCode === 404 && /image/i.test(message)) {
    return new ImageNotFoundError('image_not_found', `${operation}: ${message}`, options);
  }
  if (e.statusCode === 404) {
    return new ContainerNotFoundError('not_found', `${operation}: ${message}`, options);
  }
  return new EngineError('engine_request_failed', `${operation}: ${message}`, options);
}

/** The caller's signal aborted: thrown as an abort, which engineError passes through. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true)
    throw new DOMException(`aborted: ${errorMessage(signal.reason)}`, 'AbortError');
}

function isAbort(error: unknown): error is Error {
  return (
    error instanceof Error &&
    (error.name === 'AbortError' || (error as { code?: unknown }).code === 'ABORT_ERR')
  );
}

export function isStatus(error: unknown, ...codes: number[]): boolean {
  const status = (error as DockerodeErrorShape | null)?.statusCode;
  return status !== undefined && codes.includes(status);
}
