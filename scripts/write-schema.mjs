// Writes docs/schema/*.json from the built zod definitions (dist/evidence/schema).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evidenceJsonSchemas } from '../dist/evidence/schema/json-schema.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'docs', 'schema');
mkdirSync(dir, { recursive: true });
for (const [name, schema] of Object.entries(evidenceJsonSchemas())) {
  writeFileSync(path.join(dir, name), `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`docs/schema/${name}`);
}
