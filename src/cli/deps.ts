// What every command handler receives. Built once by main.ts; tests build their own.
import type { CfhEnvironment } from '../config/env.js';
import type { Logger } from '../log.js';
import type { ContainerRuntime } from '../substrate/runtime.js';
import type { Printer } from './print.js';
import type { HostInput } from './host-terminal.js';

export interface CliDeps {
  readonly env: CfhEnvironment;
  readonly logger: Logger;
  readonly printer: Printer;
  /** Lazily created: commands that need no engine never connect. */
  runtime(): ContainerRuntime;
  /** Aborted with a CancelRequest on SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** The operator's terminal, where an approval can be asked for (`runs apply`). */
  readonly terminal?: Terminal | undefined;
  /** cfh's stdin and terminal, for `sandbox run -i`/`-t`; absent: neither can be given. */
  readonly input?: HostInput | undefined;
}

export interface Terminal {
  /** stdin is a terminal: someone can answer. */
  readonly interactive: boolean;
  /** Asks one question (on stderr) and returns the line typed. */
  ask(question: string, signal: AbortSignal): Promise<string>;
}
