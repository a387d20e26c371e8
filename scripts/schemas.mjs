// Writes the JSON Schemas cfh publishes in docs/schema/ from their zod definitions
// (npm run schemas; a unit test fails while a published file differs from its source).
import { writeFileSync } from 'node:fs';
import { governanceJsonSchema } from '../dist/evidence/governance-record.js';

const out = new URL('../docs/schema/governance-record.schema.json', import.meta.url);
writeFileSync(out, `${JSON.stringify(governanceJsonSchema(), null, 2)}\n`);
