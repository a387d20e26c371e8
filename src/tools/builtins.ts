// The built-in sandbox tools (issue 5): exec, read_file, write_file, edit_file, list_dir,
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
import type { ToolContract } from './contract.js';
import { ObservationSchema, errorObservation, type Observation } from './observation.js';
import type { ToolContainerKind, ToolExecution } from './tool-container.js';

export interface BuiltinTool extends ToolContract {
  /** Which of the run's tool containers the tool's command runs in. */
  readonly runsIn: ToolContainerKind;
  command(
    input: unknown,
    limits: { readonly maxChars: number },
  ): { argv: string[]; stdin?: Buffer };
  observe(result: ToolExecution, input: unknown): Observation;
}

export const PYTHON_BINARY = '/usr/bin/python3';
export const GREP_BINARY = '/usr/bin/grep';

// Exit 0 with a reply, or 3 with an error reply; anything else is a failed helper.
const FILE_HELPER = `
import json, os, sys, errno
req = json.load(sys.stdin)
def out(obj):
    sys.stdout.write(json.dumps(obj)); sys.exit(0)
def fail(kind, message):
    sys.stdout.write(json.dumps({'error': kind, 'message': message})); sys.exit(3)
try:
    op = req['op']
    path = os.path.join(req['base'], req['path'])
    if op == 'read':
        with open(path, 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(req['limit'] + 1)
        out({'content': data[:req['limit']].decode('utf-8', 'replace'), 'truncated': len(data) > req['limit'], 'size': size})
    elif op == 'write':
        with open(path, 'w') as f:
            f.write(req['content'])
        out({'bytes': len(req['content'].encode())})
    elif op == 'edit':
        with open(path) as f:
            text = f.read()
        n = text.count(req['old'])
        if n != 1:
            fail('match_count', 'old_string occurs %d times; it must occur exactly once' % n)
        with open(path, 'w') as f:
            f.write(text.replace(req['old'], req['new'], 1))
        out({'replaced': 1})
    elif op == 'list':
        names = sorted(os.listdir(path))
        out({'entries': [n + ('/' if os.path.isdir(os.path.join(path, n)) else '') for n in names]})
except OSError as e:
    fail(errno.errorcode.get(e.errno, 'EIO'), e.strerror or str(e))
`;

const common = {
  outputSchema: ObservationSchema,
  permissionPolicy: 'allow' as const,
  timeoutMs: 30_000,
  resultSizeLimitChars: 32_000,
  auditPolicy: { recordInput: 'full' as const, recordOutput: 'summary' as const },
};

const fileTool = {
  ...common,
  runsIn: 'file-tool' as const,
  resourceScope:
    "the run's file-tool container: its mounts, kernel-enforced; runs only cfh's helper",
};

function helper(request: Record<string, unknown>): { argv: string[]; stdin: Buffer } {
  return {
    argv: [PYTHON_BINARY, '-I', '-S', '-B', '-c', FILE_HELPER],
    stdin: Buffer.from(JSON.stringify({ ...request, base: WORKSPACE_TARGET })),
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

const path = z.string().min(1).max(4096);

/**
 * grep runs from /, so a relative path is given to it under /workspace, spelled as given
 * (`/workspace/.` for `.`): every line it prints then starts with that operand.
 */
function grepOperand(given: string): string {
  return given.startsWith('/') ? given : `${WORKSPACE_TARGET}/${given}`;
}

/**
 * What a grep started in /workspace would have printed for a relative path: each output
 * line loses the /workspace/ its operand gained (`./calc.py:8:…`), an error message the
 * operand itself.
 */
function grepAsGiven(given: string): {
  line: (l: string) => string;
  message: (m: string) => string;
} {
  const prefix = `${WORKSPACE_TARGET}/`;
  if (given.startsWith('/')) return { line: (l) => l, message: (m) => m };
  return {
    line: (l) => (l.startsWith(prefix) ? l.slice(prefix.length) : l),
    message: (m) => m.replaceAll(grepOperand(given), given),
  };
}

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  {
    ...common,
    runsIn: 'workload',
    resourceScope: "the run's workload tool container: its mounts, kernel-enforced",
    name: 'exec',
    purpose:
      'Run a program in the sandbox. `command` is an argv array (no shell); the working directory is /workspace.',
    inputSchema: z.strictObject({ command: z.array(z.string()).min(1).max(256) }),
    riskClass: 'sandbox-exec',
    sideEffectClass: 'sandbox-contained',
    retryPolicy: { idempotent: false, maxRetries: 0 },
    command: (input) => ({ argv: [...(input as { command: string[] }).command] }),
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
  },
  {
    ...fileTool,
    name: 'read_file',
    purpose: 'Read a text file inside the sandbox.',
    inputSchema: z.strictObject({ path }),
    riskClass: 'read-only',
    sideEffectClass: 'none',
    retryPolicy: { idempotent: true, maxRetries: 1 },
    command: (input, limits) =>
      helper({ op: 'read', path: (input as { path: string }).path, limit: limits.maxChars }),
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
  },
  {
    ...fileTool,
    name: 'write_file',
    purpose: 'Create or replace a text file inside the sandbox.',
    inputSchema: z.strictObject({ path, content: z.string().max(1_000_000) }),
    riskClass: 'sandbox-write',
    sideEffectClass: 'sandbox-contained',
    retryPolicy: { idempotent: true, maxRetries: 1 },
    command: (input) => {
      const i = input as { path: string; content: string };
      return helper({ op: 'write', path: i.path, content: i.content });
    },
    observe: (result) =>
      helperObservation(result, (r) => ({
        status: 'success',
        summary: `wrote ${r.bytes ?? 0} bytes`,
        items: [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  },
  {
    ...fileTool,
    name: 'edit_file',
    purpose:
      'Replace the one occurrence of old_string with new_string in a file inside the sandbox.',
    inputSchema: z.strictObject({ path, old_string: z.string().min(1), new_string: z.string() }),
    riskClass: 'sandbox-write',
    sideEffectClass: 'sandbox-contained',
    retryPolicy: { idempotent: false, maxRetries: 0 },
    command: (input) => {
      const i = input as { path: string; old_string: string; new_string: string };
      return helper({ op: 'edit', path: i.path, old: i.old_string, new: i.new_string });
    },
    observe: (result) =>
      helperObservation(result, () => ({
        status: 'success',
        summary: 'replaced 1 occurrence',
        items: [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  },
  {
    ...fileTool,
    name: 'list_dir',
    purpose: 'List a directory inside the sandbox (directories end with /).',
    inputSchema: z.strictObject({ path }),
    riskClass: 'read-only',
    sideEffectClass: 'none',
    retryPolicy: { idempotent: true, maxRetries: 1 },
    command: (input) => helper({ op: 'list', path: (input as { path: string }).path }),
    observe: (result) =>
      helperObservation(result, (r) => ({
        status: 'success',
        summary: `${r.entries?.length ?? 0} entries`,
        items: r.entries ?? [],
        evidence_refs: [],
        next_valid_actions: [],
      })),
  },
  {
    ...fileTool,
    name: 'grep',
    purpose: 'Search files inside the sandbox for a regular expression (grep -rn).',
    inputSchema: z.strictObject({ pattern: z.string().min(1).max(1000), path }),
    riskClass: 'read-only',
    sideEffectClass: 'none',
    retryPolicy: { idempotent: true, maxRetries: 1 },
    command: (input) => {
      const i = input as { pattern: string; path: string };
      return { argv: [GREP_BINARY, '-rn', '-e', i.pattern, '--', grepOperand(i.path)] };
    },
    observe: (result, input) => {
      if (result.timedOut) return errorObservation('timeout', 'the search ran out of time');
      const asGiven = grepAsGiven((input as { path: string }).path);
      if (result.exitCode > 1)
        return errorObservation(
          'error',
          asGiven.message(result.stderr.toString('utf8').trim()) ||
            `grep failed (exit ${result.exitCode})`,
        );
      const lines = result.stdout
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map(asGiven.line);
      return {
        status: 'success',
        summary: `${lines.length} matching line(s)`,
        items: lines,
        evidence_refs: [],
        next_valid_actions: [],
      };
    },
  },
];
