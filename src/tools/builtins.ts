// The built-in sandbox tools (issue 5): exec, read_file, write_file, edit_file, list_dir,
// grep. Each becomes a command inside the run's tool container, so the kernel enforces the
// mounts (a write to an `ro` mount fails there, and comes back as a typed error). File
// tools run a small python3 helper that reads its request as JSON on stdin: no argument
// ever reaches a shell.
import { z } from 'zod';
import type { ToolContract } from './contract.js';
import { ObservationSchema, errorObservation, type Observation } from './observation.js';
import type { ToolExecution } from './tool-container.js';

export interface BuiltinTool extends ToolContract {
  command(
    input: unknown,
    limits: { readonly maxChars: number },
  ): { argv: string[]; stdin?: Buffer };
  observe(result: ToolExecution, input: unknown): Observation;
}

const FILE_HELPER = `
import json, os, sys, errno
req = json.load(sys.stdin)
def out(obj):
    sys.stdout.write(json.dumps(obj)); sys.exit(0)
def fail(kind, message):
    sys.stdout.write(json.dumps({'error': kind, 'message': message})); sys.exit(3)
try:
    op = req['op']
    if op == 'read':
        with open(req['path'], 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(req['limit'] + 1)
        out({'content': data[:req['limit']].decode('utf-8', 'replace'), 'truncated': len(data) > req['limit'], 'size': size})
    elif op == 'write':
        with open(req['path'], 'w') as f:
            f.write(req['content'])
        out({'bytes': len(req['content'].encode())})
    elif op == 'edit':
        with open(req['path']) as f:
            text = f.read()
        n = text.count(req['old'])
        if n != 1:
            fail('match_count', 'old_string occurs %d times; it must occur exactly once' % n)
        with open(req['path'], 'w') as f:
            f.write(text.replace(req['old'], req['new'], 1))
        out({'replaced': 1})
    elif op == 'list':
        names = sorted(os.listdir(req['path']))
        out({'entries': [n + ('/' if os.path.isdir(os.path.join(req['path'], n)) else '') for n in names]})
except OSError as e:
    fail(errno.errorcode.get(e.errno, 'EIO'), e.strerror or str(e))
`;

const common = {
  outputSchema: ObservationSchema,
  resourceScope: 'the run tool container: its mounts, kernel-enforced',
  permissionPolicy: 'allow' as const,
  timeoutMs: 30_000,
  resultSizeLimitChars: 32_000,
  auditPolicy: { recordInput: 'full' as const, recordOutput: 'summary' as const },
};

function helper(request: Record<string, unknown>): { argv: string[]; stdin: Buffer } {
  return { argv: ['python3', '-c', FILE_HELPER], stdin: Buffer.from(JSON.stringify(request)) };
}

interface HelperReply {
  readonly error?: string;
  readonly message?: string;
  readonly content?: string;
  readonly truncated?: boolean;
  readonly entries?: string[];
  readonly bytes?: number;
  readonly size?: number;
}

/** The helper's JSON reply, or a typed error when the tool itself failed. */
function helperObservation(
  result: ToolExecution,
  ok: (reply: HelperReply) => Observation,
): Observation {
  if (result.timedOut) return errorObservation('timeout', 'the tool ran out of time');
  let reply: HelperReply;
  try {
    reply = JSON.parse(result.stdout.toString('utf8')) as HelperReply;
  } catch {
    return errorObservation('error', `the tool failed (exit ${result.exitCode})`);
  }
  if (reply.error !== undefined) {
    const hint = reply.error === 'EROFS' ? ' (this path is on a read-only mount)' : '';
    return errorObservation('error', `${reply.error}: ${reply.message ?? ''}${hint}`);
  }
  return ok(reply);
}

const path = z.string().min(1).max(4096);

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  {
    ...common,
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
    ...common,
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
    ...common,
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
    ...common,
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
    ...common,
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
    ...common,
    name: 'grep',
    purpose: 'Search files inside the sandbox for a regular expression (grep -rn).',
    inputSchema: z.strictObject({ pattern: z.string().min(1).max(1000), path }),
    riskClass: 'read-only',
    sideEffectClass: 'none',
    retryPolicy: { idempotent: true, maxRetries: 1 },
    command: (input) => {
      const i = input as { pattern: string; path: string };
      return { argv: ['grep', '-rn', '-e', i.pattern, '--', i.path] };
    },
    observe: (result) => {
      if (result.timedOut) return errorObservation('timeout', 'the search ran out of time');
      if (result.exitCode > 1)
        return errorObservation(
          'error',
          result.stderr.toString('utf8').trim() || `grep failed (exit ${result.exitCode})`,
        );
      const lines = result.stdout
        .toString('utf8')
        .split('\n')
        .filter((l) => l !== '');
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
