// The registry of event types: every line of events.jsonl is an envelope (cfh.event/1)
// whose `data` is described by the schema registered for its `type`. EventLog.append takes
// only a registered type and data of its shape, and checks it at run time too; readers
// (runs show, audit, report, export) parse with the same schemas.
//
// HOW TO ADD AN EVENT TYPE
//   1. Put its data schema in the family file it belongs to (events-<family>.ts), as a
//      z.strictObject, with a comment saying what it records; or add a family file
//      events-<family>.ts exporting `<family>Events = { type: schema, ... } as const` and
//      spread it into EVENT_SCHEMAS below.
//   2. `npm run schemas` regenerates docs/schema/*.json (a unit test fails until
//      it is regenerated).
//   3. If an audit check should read it, read it with `eventsOf(run, 'type')`; a check whose
//      event type is absent from a run says not-applicable.
// Adding an optional field or a new type keeps cfh.event/1. Changing or removing a field,
// or making one required, is a new version: bump EVENT_SCHEMA and keep the old reader.
import { z } from 'zod';
import { IsoTime, RunIdString, Sha256Hex } from './common.js';
import { cfcEvents } from './events-cfc.js';
import { childEvents } from './events-children.js';
import { containerEvents } from './events-container.js';
import { contextEvents } from './events-context.js';
import { draftEvents } from './events-draft.js';
import { hostEvents } from './events-host.js';
import { lifecycleEvents } from './events-lifecycle.js';
import { modelEvents } from './events-model.js';
import { networkEvents } from './events-network.js';
import { sandboxEvents } from './events-sandbox.js';
import { sessionEvents } from './events-session.js';
import { toolEvents } from './events-tools.js';

export const EVENT_SCHEMA = 'cfh.event/1';

export const EVENT_SCHEMAS = {
  ...lifecycleEvents,
  ...containerEvents,
  ...sandboxEvents,
  ...modelEvents,
  ...toolEvents,
  ...networkEvents,
  ...hostEvents,
  ...draftEvents,
  ...cfcEvents,
  ...contextEvents,
  ...sessionEvents,
  ...childEvents,
} as const;

export type EventType = keyof typeof EVENT_SCHEMAS;
/** What a writer passes for `type` (optional fields may be left out). */
export type EventInput<T extends EventType> = z.input<(typeof EVENT_SCHEMAS)[T]>;
/** What a reader gets for `type`. */
export type EventData<T extends EventType> = z.output<(typeof EVENT_SCHEMAS)[T]>;

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_SCHEMAS, type);
}

/** One line of events.jsonl; `data` is checked against the type's schema separately. */
export const EventEnvelope = z.strictObject({
  schema: z.literal(EVENT_SCHEMA),
  seq: z.number().int().positive(),
  ts: IsoTime,
  runId: RunIdString,
  type: z.string().min(1),
  data: z.record(z.string(), z.unknown()),
  prevHash: Sha256Hex,
  hash: Sha256Hex,
});
export type EventEnvelope = z.infer<typeof EventEnvelope>;

/** Checks `data` against the schema of `type`; the issues in words, or none. */
export function eventDataIssues(type: string, data: unknown): string[] {
  if (!isEventType(type)) return [`event type '${type}' is not in the registry`];
  const parsed = EVENT_SCHEMAS[type].safeParse(data);
  return parsed.success ? [] : parsed.error.issues.map(issueText);
}

export function issueText(issue: z.core.$ZodIssue): string {
  const where = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.');
  return `${where}: ${issue.message}`;
}
