// Converts what dockerode throws into cfh's typed errors, at the substrate boundary.
import {
  ContainerNotFoundError,
  EngineError,
  EngineUnavailableError,
  ImageNotFoundError,
  errorMessage,
} from '../errors.js';

interface DockerodeErrorShape {
  statusCode?: number;
  code?: string;
  json?: { message?: string } | null;
  reason?: string;
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOENT',
  'EACCES',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

export function engineError(error: unknown, operation: string): EngineError {
  if (error instanceof EngineError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as DockerodeErrorShape;
  const message = e.json?.message ?? e.reason ?? errorMessage(error);
  if (e.statusCode === undefined && e.code !== undefined && UNREACHABLE.has(e.code)) {
    return new EngineUnavailableError(
      'engine_unreachable',
      `Docker engine unreachable during ${operation}: ${errorMessage(error)}`,
      { cause: error },
    );
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

export function isStatus(error: unknown, ...codes: number[]): boolean {
  const status = (error as DockerodeErrorShape | null)?.statusCode;
  return status !== undefined && codes.includes(status);
}
