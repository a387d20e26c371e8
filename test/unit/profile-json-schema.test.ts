// docs/schema/profile.json is generated from the zod ProfileFile (npm run schemas): the
// published schema documents what cfh parses, the CFC vocabulary included (AH-CFC-2).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { profileJsonSchema } from '../../src/config/profile-json-schema.js';

const PUBLISHED = new URL('../../docs/schema/profile.json', import.meta.url);

describe('docs/schema/profile.json', () => {
  it('is generated from the zod profile file schema (npm run schemas)', () => {
    const published: unknown = JSON.parse(readFileSync(PUBLISHED, 'utf8'));
    expect(published).toEqual(JSON.parse(JSON.stringify(profileJsonSchema())));
  });

  it('documents the cfc section and the labels of mounts', () => {
    const schema = profileJsonSchema() as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    expect(Object.keys(schema.properties.cfc?.properties ?? {}).sort()).toEqual([
      'envLabels',
      'mode',
      'modelClearance',
      'sinks',
    ]);
    expect(JSON.stringify(schema.properties.mounts)).toContain('"label"');
    expect(JSON.stringify(schema.properties.cfc)).toContain('enforce-strict');
  });
});
