// The built-in sandbox tools: exec, read_file, write_file, edit_file, list_dir,
// grep. Each becomes a command inside one of the run's tool containers, so the kernel
// enforces the mounts (a write to an `ro` mount fails there, and comes back as a typed
// error). `exec` runs the model's program in the workload container. The file tools run
// only cfh's code, in the file-tool container (tool-container.ts): a python3 helper given on
// the command line, started isolated (-I: no PYTHON* variables, no script or working
// directory on the import path, no user site; -S: no site module, so no .pth,
// sitecustomize or usercustomize; -B: no bytecode written), and grep, both by absolute path
// on the image's read-only root. The helper reads its request as JSON on stdin: no
// argument ever reaches a shell. Relative paths are resolved against /workspace by the
// helper itself, never through its working directory (which is /).
import { z } from 'zod';
import { WORKSPACE_TARGET } from '../sandbox/mount-policy.js';
import type { ToolDefinition } from './contract.js';
import { BUILTIN_INPUTS } from './builtin-inputs.js';
import { FILE_HELPER } from './file-helper.js';
import { ObservationSchema, errorObservation, type Observation } from './observation.js';
import type { ToolContainerKind, ToolExecution } from './tool-container.js';

/**
 * What a command is built with: the most characters its result may keep, and the target of
 * every mount of the container it runs in (the file helper's mount boundary: file-helper.ts).
 */
export interface ToolLimits {
  readonly maxChars: number;
  readonly mounts: readonly string[];
}

/** A built-in: a definition, and how it becomes a command in one of the run's containers. */
export interface BuiltinTool extends ToolDefinition {
  readonly executor: 'sandbox';
  /** Which of the run's tool containers the tool's command runs in. */
  readonly runsIn: ToolContainerKind;
  /** The command for arguments the mediator authorized (validated against `input`). */
  command(args: unknown, limits: ToolLimits): { argv: string[]; stdin?: Buffer };
  observe(result: ToolExecution, args: unknown): Observation;
  /** A call's own, lower time limit (exec's `timeout`), in ms; none: the tool's. */
  callTimeoutMs?(args: unknown): number | undefined;
}

interface BuiltinSpec<I extends z.ZodType> extends Omit<
  BuiltinTool,
  'command' | 'observe' | 'input' | 'callTimeoutMs'
> {
  readonly input: I;
  command(args: z.infer<I>, limits: ToolLimits): { argv: string[]; stdin?: Buffer };
  observe(result: ToolExecution, args: z.infer<I>): Observation;
  callTimeoutMs?(args: z.infer<I>): number | undefined;
}

/**
 * A built-in whose command and observation see its input's own type: the arguments are
 * parsed with the tool's schema again at the boundary (cheap, and no cast anywhere).
 */
function builtin<I extends z.ZodType>(spec: BuiltinSpec<I>): BuiltinTool {
  return {
    ...spec,
    command: (args, limits) => spec.command(spec.input.parse(args), limits),
    observe: (result, args) => spec.observe(result, spec.input.parse(args)),
    ...(spec.callTimeoutMs === undefined
      ? {}
      : { callTimeoutMs: (args) => spec.callTimeoutMs?.(spec.input.parse(args)) }),
  };
}

export const PYTHON_BINARY = '/usr/bin/python3';
export const GREP_BINARY = '/usr/bin/grep';

// Every built-in acts on the workspace and the run's other mounts only (the kernel holds it
// to them inside the container): resource scope `project`.
const common = {
  output: ObservationSchema,
  executor: 'sandbox' as const,
  resourceScope: 'project' as const,
  permissionPolicy: 'allow' as const,
  timeoutMs: 30_000,
  resultSizeLimitChars: 32_000,
  auditPolicy: 'full_structured_event' as const,
};

const fileTool = { ...common, runsIn: 'file-tool' as const };
const reading = { riskClass: 'read_only' as const, sideEffectClass: 'none' as const };
/** Runs only cfh's own helper (tool-container.ts), so a repeat reads the same again. */
const safeRetry = { retryPolicy: 'safe_retry' as const, maxRetries: 1 };
const noRetry = { retryPolicy: 'no_auto_retry' as const, maxRetries: 0 };

function helper(
  request: Record<string, unknown>,
  limits: ToolLimits,
): { argv: string[]; stdin: Buffer } {
  return {
    argv: [PYTHON_BINARY, '-I', '-S', '-B', '-c', FILE_HELPER],
    stdin: Buffer.from(
      JSON.stringify({ ...request, base: WORKSPACE_TARGET, mounts: limits.mounts }),
    ),
  };
}

const HelperReply = z.strictObject({
  error: z.string().optional(),
  message: z.string().optional(),
  content: z.string().optional(),
  truncated: z.boolean().optional(),
  entries: z.array(z.string()).optional(),
  bytes: z.number().int().nonnegative().optional(),
  size: z.number().int().nonnegative().optional(),
  replaced: z.literal(1).optional(),
});
type HelperReply = z.infer<typeof HelperReply>;

function parseReply(stdout: Buffer): HelperReply | undefined {
  try {
    const parsed = HelperReply.safeParse(JSON.parse(stdout.toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The helper's JSON reply, or a typed error when the tool itself failed. */
function helperObservation(
  result: ToolExecution,
  ok: (reply: HelperReply) => Observation,
): Observation {
  if (result.timedOut) return errorObservation('timeout', 'the tool ran out of time');
  // Only the helper's own two exits carry a reply: a process that was killed, or that
  // died on the way, answers nothing, whatever it printed first.
  const reply =
    result.exitCode === 0 || result.exitCode === 3 ? parseReply(result.stdout) : undefined;
  if (reply === undefined || (result.exitCode === 3) !== (reply.error !== undefined))
    return errorObservation('error', `the tool failed (exit ${result.exitCode})`);
  if (reply.error !== undefined) {
    const hint = reply.error === 'EROFS' ? ' (this path is on a read-only mount)' : '';
    return errorObservation('error', `${reply.error}: ${reply.message ?? ''}${hint}`);
  }
  return ok(reply);
}

/**
 * grep never resolves a path through its working directory: a relative path is given to it
 * under /workspace, spelled as given (`/workspace/.` for `.`): every line it prints then
 * starts with that operand.
 */
function grepOperand(given: string): string {
  return given.startsWith('/') ? given : `${WORKSPACE_TARGET}/${given}`;
}

/** The start grep is handed: the helper's opened start path (file-helper.ts). */
export const GREP_START = '/proc/self/fd/7';

/**
 * What a grep started in /workspace would have printed for a relative path: each output
 * line names its file under the path the model gave (grep was handed the opened start,
 * GREP_START, in its place), without the /workspace/ its operand gained (`./calc.py:8:…`);
 * an error message the operand itself.
 */
function grepAsGiven(given: string): {
  line: (l: string) => string;
  message: (m: string) => string;
} {
  const operand = grepOperand(given);
  const named = (l: string): string =>
    l === GREP_START || l.startsWith(`${GREP_START}/`) ? operand + l.slice(GREP_START.length) : l;
  const prefix = `${WORKSPACE_TARGET}/`;
  if (given.startsWith('/'))
    return { line: named, message: (m) => m.replaceAll(GREP_START, operand) };
  return {
    line: (l) => {
      const n = named(l);
      return n.startsWith(prefix) ? n.slice(prefix.length) : n;
    },
    message: (m) => m.replaceAll(GREP_START, given).replaceAll(operand, given),
  };
}

/** `grep -Z` output: each match is `FILE \0 LINE:TEXT \n`; FILE may hold anything but NUL. */
export function grepMatches(out: string): { file: string; rest: string }[] {
  const matches: { file: string; rest: string }[] = [];
  let at = 0;
  while (at < out.length) {
    const nul = out.indexOf('\0', at);
    if (nul < 0) break;
    const eol = out.indexOf('\n', nul);
    const end = eol < 0 ? out.length : eol;
    matches.push({ file: out.slice(at, nul), rest: out.slice(nul + 1, end) });
    at = end + 1;
  }
  return matches;
}

/** A file name as the observation shows it: JSON-quoted when it holds a control character. */
function fileName(name: string): string {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f]/.test(name) ? JSON.stringify(name) : name;
}

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  builtin({
    ...common,
    ...noRetry,
    runsIn: 'workload',
    name: 'exec',
    purpose:
      'Run a program in the sandbox. `command` is an argv array (no shell); the working directory is /workspace; `timeout` (seconds) may only lower the time limit.',
    input: BUILTIN_INPUTS.exec,
    // The model's own program: it may do anything the sandbox allows, inside it.
    riskClass: 'process_execution',
    sideEffectClass: 'process_or_network_execution',
    permissionPolicy: 'sandbox',
    command: (args) => ({ argv: [...args.command] }),
    // Lower only: the tool's own limit and the profile's cap still bound it (sandbox-runner.ts).
    callTimeoutMs: (args) => (args.timeout === undefined ? undefined : args.timeout * 1000),
    observe: (result) => {
      if (result.timedOut)
        return errorObservation('timeout', 'the command ran out of time and was killed');
      const stdout = result.stdout.toString('utf8');
      const stderr = result.stderr.toString('utf8');
      return {
        status: result.exitCode === 0 ? 'success' : 'error',
        summary: `exit ${result.exitCode}${result.exitCode === 137 ? ' (killed: the memory or process limit?)' : ''}${result.stdoutTruncated || result.stderrTruncated ? ' (output truncated)' : ''}`,
        items: [`stdout:\n${stdout}`, `stderr:\n${stderr}`],
        evidence_refs: [],
        next_valid_actions: [],
      };
    },
  }),
  builtin({
    ...fileTool,
    ...reading,
    ...safeRetry,
    name: 'read_file',
    purpose: 'Read a text file inside the sandbox.',
    input: BUILTIN_INPUTS.read_file,
    command: (args, limits) =>
      helper({ op: 'read', path: args.path, limit: limits.maxChars }, limits),
    observe: (result) =>
      helperObservation(result, (r) => ({
        status: 'success',
        summary:
          r.truncated === true
            ? `file content (truncated: the file has ${String(r.size ?? 'more')} bytes)`
            : 'file content',
        items: [r.content ?? ''],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  }),
  builtin({
    ...fileTool,
    name: 'write_file',
    purpose: 'Create or replace a text file inside the sandbox.',
    input: BUILTIN_INPUTS.write_file,
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    // Writing the same content again leaves the same file.
    retryPolicy: 'idempotent_only',
    maxRetries: 1,
    command: (args, limits) =>
      helper({ op: 'write', path: args.path, content: args.content }, limits),
    observe: (result) =>
      helperObservation(result, (r) => ({
        status: 'success',
        summary: `wrote ${r.bytes ?? 0} bytes`,
        items: [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  }),
  builtin({
    ...fileTool,
    ...noRetry,
    name: 'edit_file',
    purpose:
      'Replace the one occurrence of old_string with new_string in a file inside the sandbox.',
    input: BUILTIN_INPUTS.edit_file,
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    command: (args, limits) =>
      helper({ op: 'edit', path: args.path, old: args.old_string, new: args.new_string }, limits),
    observe: (result) =>
      helperObservation(result, () => ({
        status: 'success',
        summary: 'replaced 1 occurrence',
        items: [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  }),
  builtin({
    ...fileTool,
    ...reading,
    ...safeRetry,
    name: 'list_dir',
    purpose: 'List a directory inside the sandbox (directories end with /).',
    input: BUILTIN_INPUTS.list_dir,
    command: (args, limits) => helper({ op: 'list', path: args.path }, limits),
    observe: (result) =>
      helperObservation(result, (r) => ({
        status: 'success',
        summary: `${r.entries?.length ?? 0} entries`,
        items: r.entries ?? [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  }),
  builtin({
    ...fileTool,
    ...safeRetry,
    name: 'grep',
    purpose: 'Search files inside the sandbox for a regular expression (grep -rn).',
    input: BUILTIN_INPUTS.grep,
    riskClass: 'search_only',
    sideEffectClass: 'none',
    // Through the helper, which refuses a start path that leads out of its mount (grep -r
    // follows a link given as the operand, never one below it), then becomes grep.
    command: (args, limits) =>
      helper(
        {
          op: 'grep',
          path: args.path,
          // -Z: each file name ends with a NUL, which no name can hold, so a name with a line
          // feed in it cannot pass for a match of another file.
          // The helper appends the start it opened and checked (GREP_START).
          argv: [GREP_BINARY, '-rnZ', '-e', args.pattern, '--'],
        },
        limits,
      ),
    observe: (result, args) => {
      if (result.timedOut) return errorObservation('timeout', 'the search ran out of time');
      const asGiven = grepAsGiven(args.path);
      if (result.exitCode > 1)
        return errorObservation(
          'error',
          asGiven.message(result.stderr.toString('utf8').trim()) ||
            `grep failed (exit ${result.exitCode})`,
        );
      const lines = grepMatches(result.stdout.toString('utf8')).map(
        (m) => `${fileName(asGiven.line(m.file))}:${m.rest}`,
      );
      return {
        status: 'success',
        summary: `${lines.length} matching line(s)`,
        items: lines,
        evidence_refs: [],
        next_valid_actions: [],
      };
    },
  }),
];
