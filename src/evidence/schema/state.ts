// state.json (cfh.state/1): replaced atomically at each lifecycle step, citing the last
// event written so far; after the run, the terminal state citing run_finished.
import { z } from 'zod';
import { IsoTime, RunIdString, Sha256Hex } from './common.js';

export const STATE_SCHEMA = 'cfh.state/1';

export const EventAnchor = z.strictObject({ seq: z.number().int().nonnegative(), hash: Sha256Hex });

export const RunState = z.looseObject({
  schema: z.literal(STATE_SCHEMA),
  runId: RunIdString,
  state: z.enum(['created', 'running', 'completed', 'failed', 'cancelled']),
  terminalReason: z.string().optional(),
  exitCode: z.number().int().optional(),
  containerId: z.string().optional(),
  /** The cfh process writing the run, when the writer records itself here. */
  writer: z.looseObject({ pid: z.number(), start: z.string(), host: z.string() }).optional(),
  updatedAt: IsoTime,
  lastEvent: EventAnchor,
});
export type RunState = z.infer<typeof RunState>;
