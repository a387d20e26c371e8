// Shared plumbing of the round-4 adversarial tests: a labelled secret, a notes store that
// host tools read and write (a file outside every mount), and the model's own context.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import type { Scratch } from './helpers.js';
import { NODE } from './host-tools-support.js';

export const SECRET = 'Zq7SECRETtoken4412';

/** A store program: `put TEXT` appends TEXT to $STORE, `get` prints the store. */
export const STORE_JS = `import { appendFileSync, readFileSync } from 'node:fs';
const f = process.env.STORE;
const [op, text] = process.argv.slice(2);
if (op === 'put') { appendFileSync(f, text + '\\n'); process.stdout.write('stored\\n'); }
else { let s = ''; try { s = readFileSync(f, 'utf8'); } catch {} process.stdout.write('notes: ' + s + '\\n'); }
`;

/** A notes host tool over `store` (an exec tool), with the given CFC fields. */
export function notesTool(
  toolsDir: string,
  storeFile: string,
  cfc: Record<string, unknown>,
): Record<string, unknown> {
  return {
    name: 'notes',
    kind: 'exec',
    argv: [NODE, path.join(toolsDir, 'store.mjs'), '{op}', '{text}'],
    cwd: toolsDir,
    input: {
      op: { type: 'string', pattern: 'get|put' },
      text: { type: 'string', maxLength: 2000, pattern: '[\\s\\S]*' },
    },
    env: { STORE: { value: storeFile } },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    ...cfc,
  };
}

/** A policy rule that lets the notes tool run without a person. */
export const ALLOW_NOTES = [
  { id: 'allow-notes', match: { tool: 'host__notes' }, decision: 'allow', reason: 'notes' },
];

export async function yamlFile(scratch: Scratch, name: string, body: unknown): Promise<string> {
  return scratch.file(name, stringify(body));
}

/** Every text file under `dir`, recursively. */
export async function allText(dir: string): Promise<string> {
  let out = '';
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out += await allText(p);
    else if (e.isFile()) out += await readFile(p, 'utf8').catch(() => '');
  }
  return out;
}

/** What a run's model was sent (its transcript), or '' when it has none. */
export async function modelContext(runDir: string): Promise<string> {
  return readFile(path.join(runDir, 'transcript.jsonl'), 'utf8').catch(() => '');
}
