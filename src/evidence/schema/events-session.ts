// Events of an interactive session (`cfh serve --stdio`): one run, many turns, each turn's
// start and end in the run's one hash chain, so the chain is the session's turn index
// (AH-INT-1/2/3). A restored session says which run it continues and that run's last hash
// (AH-INT-4).
import { z } from 'zod';
import { Count, PrefixedSha256, RunIdString, Sha256Hex } from './common.js';
import { InputCaptureRecord } from './events-cfc.js';

/** `turn-0001`…: a session's turns, numbered across a restore. */
export const TurnId = z.string().regex(/^turn-\d{4,}$/);
/** The JSON-RPC id the caller gave the request that started the turn (its own, recorded). */
export const RequestId = z.union([z.string().max(200), z.number().int()]).nullable();
const Digested = z.strictObject({ chars: Count, digest: PrefixedSha256 });

export const sessionEvents = {
  /** A turn began: who asked (request id), the prompt slots by digest, the capture record. */
  turn_started: z.strictObject({
    turnId: TurnId,
    requestId: RequestId,
    prompt: Digested,
    context: z.array(Digested),
    quoted: z.array(Digested),
    /** The input-capture record of the turn's direct command (surface stdio). */
    capture: InputCaptureRecord,
  }),
  /**
   * A turn ended. `transcript*` bind the transcript as it stood at the end of the turn, so
   * a restore rebuilds the conversation only from what the chain vouches for.
   */
  turn_completed: z.strictObject({
    turnId: TurnId,
    status: z.enum(['answered', 'cancelled', 'failed', 'budget']),
    reason: z.string().min(1),
    finalAnswerChars: Count.nullable(),
    modelRequests: Count,
    transcriptMessages: Count,
    transcriptSha256: Sha256Hex,
  }),
  /** This run continues a session whose previous run ended without closing it. */
  session_restored: z.strictObject({
    sessionId: RunIdString,
    fromRunId: RunIdString,
    fromLastSeq: Count,
    fromLastHash: Sha256Hex,
    turns: Count,
    modelRequests: Count,
    transcriptMessages: Count,
    transcriptSha256: Sha256Hex,
  }),
  /** The session was closed: by the caller, end of its input, or a signal. */
  session_closed: z.strictObject({
    reason: z.enum(['session/close', 'eof', 'signal', 'budget']),
    turns: Count,
  }),
} as const;
