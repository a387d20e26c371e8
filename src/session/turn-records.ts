// What a session's turns leave in the evidence and the report: the `turn_started` record
// (the slots by digest and the turn's capture), the transcript's state each `turn_completed`
// vouches for (what a restore may rebuild from, AH-INT-4), and the usage and tool-call
// totals of every turn together (report.json, AH-USAGE-2).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { AgentResult } from '../engine/agent/agent-run.js';
import type { AgentLoopResult, PromptSlots, UsageRecord } from '../engine/agent/agent-loop.js';
import { digest } from '../engine/agent/agent-run-records.js';
import type { RunEnd } from '../engine/run/terminal.js';
import type { InputCaptureRecord } from '../evidence/schema/events-cfc.js';
import type { sessionEvents } from '../evidence/schema/events-session.js';
import type { z } from 'zod';

/** The `turn_started` record of a turn: its ids, its slots by size and digest, its capture. */
export function turnStarted(
  turnId: string,
  requestId: string | number | null,
  slots: PromptSlots,
  capture: InputCaptureRecord,
): z.input<typeof sessionEvents.turn_started> {
  const described = (t: string): { chars: number; digest: string } => ({
    chars: t.length,
    digest: digest(t),
  });
  return {
    turnId,
    requestId,
    prompt: described(slots.prompt),
    context: (slots.context ?? []).map(described),
    quoted: (slots.quoted ?? []).map(described),
    capture,
  };
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The transcript as it stands: how many messages and the digest of its bytes. */
export async function transcriptState(file: string): Promise<{ messages: number; sha256: string }> {
  const body = await readFile(file);
  let messages = 0;
  for (const byte of body) if (byte === 0x0a) messages += 1;
  return { messages, sha256: createHash('sha256').update(body).digest('hex') };
}

/** What the session's turns add up to, for report.json (usage: the run's AttemptLedger). */
export class SessionTotals {
  readonly #byStatus: Record<string, number> = Object.create(null) as Record<string, number>;
  readonly #byTool: Record<string, number> = Object.create(null) as Record<string, number>;
  #total = 0;
  #last: AgentLoopResult | undefined;

  add(loop: AgentLoopResult): void {
    this.#total += loop.toolCalls.total;
    for (const [k, v] of Object.entries(loop.toolCalls.byStatus))
      this.#byStatus[k] = (this.#byStatus[k] ?? 0) + v;
    for (const [k, v] of Object.entries(loop.toolCalls.byTool))
      this.#byTool[k] = (this.#byTool[k] ?? 0) + v;
    this.#last = loop;
  }

  result(end: RunEnd, usage: readonly UsageRecord[]): AgentResult {
    const last = this.#last;
    return {
      status: end.kind === 'budget' ? 'failed' : 'completed',
      terminalReason: end.kind === 'budget' ? `budget_exceeded:${end.budget}` : 'session_closed',
      ...(last?.finalAnswer === undefined ? {} : { finalAnswer: last.finalAnswer }),
      ...(last?.budget === undefined ? {} : { budget: last.budget }),
      usage,
      toolCalls: { total: this.#total, byStatus: this.#byStatus, byTool: this.#byTool },
    };
  }
}
