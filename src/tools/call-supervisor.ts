// What cfh asks of the call supervisor (call-supervisor-source.ts) and reads back from it.
// Every tool call's exec is the supervisor; the call's command is its child, in a session
// the call cannot leave. cfh writes one request (its time limit, stop bound and output
// bound, the length of its stdin, then argv and the call's env as netstrings, then the
// stdin) and keeps the exec's stdin open: STOP_WORD there (or the stream's end, cfh gone)
// stops the call. The exec's stdout is one JSON report: how the command ended, what it
// printed (bounded, base64), and, when the call was stopped (its deadline, or cfh's word),
// which session was killed, how many processes, how long it took, and whether none was left
// (AH-LIFE-3, AH-INT-5).
import { z } from 'zod';
import { CALL_SUPERVISOR } from './call-supervisor-source.js';

/** Started by absolute path on the image's read-only root, like the file helper. */
const PYTHON_BINARY = '/usr/bin/python3';

/** Written on the exec's stdin to stop the call. */
export const STOP_WORD = Buffer.from('stop\n');

/** How long the supervisor goes on killing a call's session before it says some were left. */
export const STOP_BOUND_MS = 5_000;

/** A call stopped before it ended on its own, as the evidence records it (tool_call_stopped). */
export interface CallStop {
  /** The container the call ran in. */
  readonly containerId: string;
  /** Its deadline; cfh's word (a cancelled turn, an MCP cancellation, a signal); or its
   * supervisor stopped answering. */
  readonly reason: 'timeout' | 'cancelled' | 'supervisor_lost';
  /** `session`: the supervisor killed the call's session; `container`: cfh killed the
   * whole container, because the supervisor could not say the session was gone. */
  readonly method: 'session' | 'container';
  /** The call's session id inside the container (null: not known, the container was killed). */
  readonly session: number | null;
  /** How many processes were killed (null: not counted, the container was killed). */
  readonly processes: number | null;
  /** From the stop to nothing left (or cfh giving up), ms. */
  readonly waitedMs: number;
  /** Nothing of the call was left running when cfh reported it. */
  readonly gone: boolean;
}

export interface SupervisedCommand {
  readonly argv: readonly string[];
  /** The command's env, laid over the container's (the kind's spec env). */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin?: Buffer | undefined;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
}

/** The exec that runs `command` under its supervisor. */
export function supervisedExec(command: SupervisedCommand): {
  argv: string[];
  env: Record<string, string>;
  stdin: Buffer;
} {
  const env = Object.entries(command.env);
  const head = [
    'cfh-call/1',
    Math.max(1, Math.round(command.timeoutMs)),
    STOP_BOUND_MS,
    command.maxOutputBytes,
    command.stdin === undefined ? '-' : command.stdin.length,
    command.argv.length,
    env.length,
  ].join(' ');
  return {
    argv: [PYTHON_BINARY, '-I', '-S', '-B', '-c', CALL_SUPERVISOR],
    // Blank for the supervisor itself (a profile's LD_PRELOAD never loads into it); it
    // gives the command the call's env from the request.
    env: Object.fromEntries(env.map(([k]) => [k, ''])),
    stdin: Buffer.concat([
      Buffer.from(`${head}\n`),
      ...[...command.argv, ...env.flat()].map(netstring),
      command.stdin ?? Buffer.alloc(0),
    ]),
  };
}

/**
 * `LEN:BYTES,` of the string as UTF-8, as the engine took a JSON string before (a lone
 * surrogate becomes U+FFFD).
 */
function netstring(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from(`${bytes.length}:`), bytes, Buffer.from(',')]);
}

/** The most the exec's stdout can hold: both streams' bound in base64, and the report. */
export function reportBytes(maxOutputBytes: number): number {
  return Math.ceil(maxOutputBytes / 3) * 4 * 2 + 64 * 1024;
}

const Captured = z.strictObject({
  data: z.base64(),
  bytes: z.number().int().nonnegative(),
  truncated: z.boolean(),
});

const Stopped = z.strictObject({
  why: z.enum(['timeout', 'cancelled']),
  session: z.number().int().positive(),
  processes: z.number().int().nonnegative(),
  ms: z.number().nonnegative(),
  gone: z.boolean(),
});

const Ran = z.strictObject({
  /** The command's exit status, 128 + N when signal N killed it; null: it never ended. */
  exit: z.number().int().nullable(),
  signal: z.number().int().nullable(),
  timedOut: z.boolean(),
  stopped: Stopped.nullable(),
  stdout: Captured,
  stderr: Captured,
});

/** The command never started: the supervisor could not confine it. */
const NotConfined = z.strictObject({ setup: z.string(), stdout: Captured, stderr: Captured });

export type SupervisorReport = z.infer<typeof Ran> | z.infer<typeof NotConfined>;

/** The supervisor's report, or undefined when the exec did not end with one. */
export function readReport(
  exit: number,
  stdout: Buffer,
  truncated: boolean,
): SupervisorReport | undefined {
  if (exit !== 0 || truncated) return undefined;
  try {
    const parsed = z.union([Ran, NotConfined]).safeParse(JSON.parse(stdout.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** What a report says the command printed on one stream. */
export function printed(captured: z.infer<typeof Captured>): { bytes: Buffer; truncated: boolean } {
  return { bytes: Buffer.from(captured.data, 'base64'), truncated: captured.truncated };
}
