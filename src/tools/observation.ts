// The structured observation every tool call returns to the model, exactly one per call
// (AH-TOOL-5). Bounded before exposure, with the truncation recorded.
import { z } from 'zod';

/** Every built-in tool's output schema: what reaches the model is exactly this shape. */
export const ObservationSchema = z
  .strictObject({
    status: z.enum(['success', 'error', 'denied', 'approval_required', 'timeout', 'aborted']),
    summary: z.string(),
    items: z.array(z.string()).readonly(),
    evidence_refs: z.array(z.string()).readonly(),
    next_valid_actions: z.array(z.string()).readonly(),
    truncated: z
      .strictObject({ originalChars: z.number().int(), keptChars: z.number().int() })
      .readonly()
      .optional(),
  })
  .readonly();

/** The observation type is the schema's: one definition, checked at run time too. */
export type Observation = z.infer<typeof ObservationSchema>;
export type ObservationStatus = Observation['status'];

/**
 * Keeps the observation within `limitChars` of summary + items. Items are cut from the
 * end; what was cut is recorded, never silently dropped.
 */
export function boundObservation(observation: Observation, limitChars: number): Observation {
  const original = observation.summary.length + observation.items.reduce((n, i) => n + i.length, 0);
  if (original <= limitChars) return observation;
  let room = limitChars;
  const summary = observation.summary.slice(0, room);
  room -= summary.length;
  const items: string[] = [];
  for (const item of observation.items) {
    if (room <= 0) break;
    const kept = item.slice(0, room);
    items.push(kept);
    room -= kept.length;
  }
  const keptChars = limitChars - Math.max(room, 0);
  return { ...observation, summary, items, truncated: { originalChars: original, keptChars } };
}

export function errorObservation(
  status: Exclude<ObservationStatus, 'success'>,
  summary: string,
  nextValidActions: readonly string[] = [],
): Observation {
  return { status, summary, items: [], evidence_refs: [], next_valid_actions: nextValidActions };
}
