// pino to stderr, quiet by default (CFH_LOG_LEVEL). One child logger per component, bound
// to run and container ids; command output and payloads are never logged.
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { app: 'cfh' } }, pino.destination(2));
}
