// The evidence schema (src/evidence/schema): the published JSON Schema is what the zod
// definitions generate, the registry covers every event cfh writes, and EventLog refuses an
// event that does not match its type's schema before writing anything.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/evidence/event-log.js';
import { evidenceJsonSchemas } from '../../src/evidence/schema/json-schema.js';
import { EVENT_SCHEMAS, eventDataIssues } from '../../src/evidence/schema/registry.js';

const RUN_ID = '20260101T000000Z-0123abcd';

describe('published JSON Schema', () => {
  it.each(Object.keys(evidenceJsonSchemas()))(
    'docs/schema/%s is generated from the zod definitions (npm run schemas)',
    async (name) => {
      const published = await readFile(path.join('docs', 'schema', name), 'utf8');
      expect(published).toBe(`${JSON.stringify(evidenceJsonSchemas()[name], null, 2)}\n`);
    },
  );

  it('lists every registered event type', () => {
    const events = evidenceJsonSchemas()['event.json'] as { $defs: Record<string, unknown> };
    expect(Object.keys(events.$defs).sort()).toEqual(Object.keys(EVENT_SCHEMAS).sort());
  });
});

describe('the event registry', () => {
  it('says what is wrong with data outside a type schema, and with an unregistered type', () => {
    expect(eventDataIssues('run_created', { kind: 'command', profile: 'p', imageId: 'i' })).toEqual(
      [],
    );
    expect(
      eventDataIssues('run_created', { kind: 'job', profile: 'p', imageId: 'i', extra: 1 }).join(
        '\n',
      ),
    ).toMatch(/kind[\s\S]*extra/);
    expect(eventDataIssues('made_up', {})).toEqual(["event type 'made_up' is not in the registry"]);
  });

  it('EventLog writes the cfh.event/1 envelope and refuses an event outside its schema, writing nothing', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-schema-'));
    try {
      const file = path.join(dir, 'events.jsonl');
      const log = await EventLog.create(file, RUN_ID);
      await log.append('cancelled', { signal: 'SIGINT' });
      await expect(
        // @ts-expect-error: the type system refuses it too
        log.append('cancelled', { signal: 'SIGKILL' }),
      ).rejects.toMatchObject({ code: 'evidence_schema_violation' });
      await log.close();
      const lines = (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
        schema: 'cfh.event/1',
        seq: 1,
        type: 'cancelled',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
