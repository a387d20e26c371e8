// The published form of the evidence schemas: JSON Schema (draft 2020-12) generated from the
// zod definitions, one file per document and one for the event log, under docs/schema/.
// `npm run schemas` writes them (scripts/schemas.mjs); unit/evidence-schema.test.ts fails
// when the files and the definitions disagree.
import { z } from 'zod';
import { EVENT_SCHEMA, EVENT_SCHEMAS, EventEnvelope } from './registry.js';
import { Report, REPORT_SCHEMA } from './report.js';
import { RunSignature, SIGNATURE_SCHEMA } from './signature.js';
import { Snapshot, SNAPSHOT_SCHEMA } from './snapshot.js';
import { RunState, STATE_SCHEMA } from './state.js';
import { TranscriptMessage } from './transcript.js';

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

function doc(id: string, title: string, schema: z.ZodType): Record<string, unknown> {
  return { ...z.toJSONSchema(schema, { io: 'input' }), $schema: DRAFT, $id: `cfh:${id}`, title };
}

function eventsDocument(): Record<string, unknown> {
  const envelope = z.toJSONSchema(EventEnvelope, { io: 'input' });
  const defs: Record<string, unknown> = {};
  const cases: unknown[] = [];
  for (const [type, schema] of Object.entries(EVENT_SCHEMAS)) {
    defs[type] = z.toJSONSchema(schema, { io: 'input' });
    cases.push({
      if: { properties: { type: { const: type } } },
      then: { properties: { data: { $ref: `#/$defs/${type}` } } },
    });
  }
  return {
    ...envelope,
    $schema: DRAFT,
    $id: `cfh:${EVENT_SCHEMA}`,
    title: 'One line of events.jsonl: the envelope, and the data schema of each registered type',
    properties: {
      ...(envelope.properties ?? {}),
      type: { enum: Object.keys(EVENT_SCHEMAS) },
    },
    allOf: cases,
    $defs: defs,
  };
}

/** Every published schema by file name under docs/schema/. */
export function evidenceJsonSchemas(): Record<string, Record<string, unknown>> {
  return {
    'event.json': eventsDocument(),
    'snapshot.json': doc(SNAPSHOT_SCHEMA, 'snapshot.json: the run-start configuration', Snapshot),
    'report.json': doc(REPORT_SCHEMA, 'report.json: the terminal report', Report),
    'state.json': doc(STATE_SCHEMA, 'state.json: the lifecycle state', RunState),
    'signature.json': doc(
      SIGNATURE_SCHEMA,
      "signature.json: the operator's signature",
      RunSignature,
    ),
    'transcript-message.json': doc(
      'cfh.transcript-message/1',
      'One line of transcript.jsonl (agent runs)',
      TranscriptMessage,
    ),
  };
}
