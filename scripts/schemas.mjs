// Writes the JSON Schemas cfh publishes in docs/schema/ from their zod definitions
// (npm run schemas; unit tests fail while a published file differs from its source): the
// governance record, every evidence document and the event log (src/evidence/schema), and
// the profile file (src/config/profile-schema.ts), and the `cfh serve --stdio` protocol
// (src/serve/protocol.ts).
import { writeFileSync } from 'node:fs';
import { governanceJsonSchema } from '../dist/evidence/governance-record.js';
import { evidenceJsonSchemas } from '../dist/evidence/schema/json-schema.js';
import { profileJsonSchema } from '../dist/config/profile-json-schema.js';
import { protocolJsonSchema } from '../dist/serve/protocol.js';

const dir = new URL('../docs/schema/', import.meta.url);
writeFileSync(
  new URL('governance-record.schema.json', dir),
  `${JSON.stringify(governanceJsonSchema(), null, 2)}\n`,
);
for (const [name, schema] of Object.entries(evidenceJsonSchemas()))
  writeFileSync(new URL(name, dir), `${JSON.stringify(schema, null, 2)}\n`);
writeFileSync(new URL('profile.json', dir), `${JSON.stringify(profileJsonSchema(), null, 2)}\n`);
writeFileSync(
  new URL('session-protocol.schema.json', dir),
  `${JSON.stringify(protocolJsonSchema(), null, 2)}\n`,
);
