// The `cfh serve --stdio` protocol (cfh.session/1): JSON-RPC 2.0, one message a line. Every
// message and every method's params are parsed here with zod, and the same definitions are
// published as JSON Schema (docs/schema/session-protocol.schema.json, `npm run schemas`).
// JSON-RPC's own codes for what is not a valid call; a cfh error (error-codes.ts) in
// `error.data` for a call cfh refused (AH-INT-1: ids are the caller's, echoed and recorded).
import { z } from 'zod';

export const PROTOCOL = 'cfh.session/1';

export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** A call cfh refused or that failed: `error.data.code` is the cfh error code. */
  cfhError: -32000,
} as const;

export const RequestIdSchema = z.union([z.string().max(200), z.number().int()]);
export type RequestId = z.infer<typeof RequestIdSchema>;

/** Any message with `jsonrpc: "2.0"`: a request, a notification or a response. */
export const Message = z.union([
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    id: RequestIdSchema.optional(),
    method: z.string().min(1),
    params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  }),
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    id: RequestIdSchema.nullable(),
    result: z.unknown(),
  }),
  z.strictObject({
    jsonrpc: z.literal('2.0'),
    id: RequestIdSchema.nullable(),
    error: z
      .strictObject({ code: z.number().int(), message: z.string(), data: z.unknown() })
      .partial({ data: true }),
  }),
]);
export type Message = z.infer<typeof Message>;

const SessionId = z.string().regex(/^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
const Text = z.string().max(1 << 20);

/** What a session is opened with, over the flags `cfh serve` was started with. */
export const OpenParams = z.strictObject({
  profile: z.string().min(1).optional(),
  workspace: z.string().min(1).optional(),
  workspaceMode: z.enum(['ro', 'rw', 'draft']).optional(),
  cfc: z.enum(['disabled', 'observe', 'enforce-explicit', 'enforce-strict']).optional(),
  /** Rules approved for the whole session (as `--approve`). */
  approve: z.array(z.string().min(1)).max(64).optional(),
  mode: z.enum(['run', 'plan']).optional(),
});
export type OpenParams = z.infer<typeof OpenParams>;

export const METHOD_PARAMS = {
  'session/open': OpenParams,
  /** Restores a session in this process: the same authority or a typed refusal (AH-INT-4). */
  'session/restore': OpenParams.extend({ sessionId: SessionId }),
  'turn/start': z.strictObject({
    sessionId: SessionId,
    /** The direct command: the only slot with authority. */
    prompt: Text.min(1),
    context: z.array(Text).max(32).optional(),
    /** Quoted or retrieved material: data, never instructions. */
    quoted: z.array(Text).max(32).optional(),
    /** A subject the caller authenticated and vouches for; none: the OS user of cfh serve. */
    subject: z
      .strictObject({
        user: z.string().min(1).max(200),
        uid: z.number().int().nullable().optional(),
      })
      .optional(),
  }),
  'turn/cancel': z.strictObject({ sessionId: SessionId, turnId: z.string().optional() }),
  /** Events from `fromSeq` on, read back from the run's events.jsonl (AH-INT-3). */
  'events/replay': z.strictObject({
    sessionId: SessionId,
    fromSeq: z.number().int().positive(),
    /** A run of the session (the current one by default; an earlier one it restored). */
    runId: SessionId.optional(),
  }),
  'session/close': z.strictObject({ sessionId: SessionId }),
  /** The answer to an `approval/request`, bound to the call's digest. */
  'approval/answer': z.strictObject({
    approvalId: z.string().min(1),
    argsDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    answer: z.enum(['once', 'rule', 'deny']),
    why: z.string().max(1000).optional(),
  }),
} as const;
export type Method = keyof typeof METHOD_PARAMS;
export type ParamsOf<M extends Method> = z.infer<(typeof METHOD_PARAMS)[M]>;

export function isMethod(name: string): name is Method {
  return Object.hasOwn(METHOD_PARAMS, name);
}

/** The result of an `approval/request` the server sent (same shape as approval/answer). */
export const ApprovalResult = METHOD_PARAMS['approval/answer'].omit({ approvalId: true });

/** What the server sends unasked. */
export const NOTIFICATIONS = {
  /** One event record of the session's run, once durable: the envelope as events.jsonl has it. */
  event: z.strictObject({
    sessionId: SessionId,
    runId: SessionId,
    record: z.record(z.string(), z.unknown()),
  }),
  'turn/completed': z.strictObject({
    sessionId: SessionId,
    turnId: z.string(),
    status: z.enum(['answered', 'cancelled', 'failed', 'budget']),
    reason: z.string(),
    finalAnswer: z.string().nullable(),
    toolCalls: z.number().int().nonnegative(),
  }),
  'session/closed': z.strictObject({
    sessionId: SessionId,
    runId: SessionId,
    status: z.string(),
    exitCode: z.number().int(),
    terminalReason: z.string(),
  }),
} as const;

/** The published form: every message, every method's params, every notification. */
export function protocolJsonSchema(): Record<string, unknown> {
  const io = { io: 'input' } as const;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `cfh:${PROTOCOL}`,
    title: 'cfh serve --stdio: JSON-RPC 2.0 messages, one per line',
    ...z.toJSONSchema(Message, io),
    $defs: {
      params: Object.fromEntries(
        Object.entries(METHOD_PARAMS).map(([m, s]) => [m, z.toJSONSchema(s, io)]),
      ),
      notifications: Object.fromEntries(
        Object.entries(NOTIFICATIONS).map(([m, s]) => [m, z.toJSONSchema(s, io)]),
      ),
      'approval/request result': z.toJSONSchema(ApprovalResult, io),
    },
  };
}
