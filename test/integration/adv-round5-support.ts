// What the round-5 adversarial tests (adv-round5-*.test.ts) share: the round-3/4 plumbing
// (profiles and scripts in a scratch directory, a scripted agent run), a state directory
// per scenario (its written-labels records are its own), and a snapshot reader.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Scratch } from './helpers.js';

export {
  profile,
  script,
  scriptedRun,
  secretDir,
  transcriptText,
  modelResults,
  NODE,
} from './adv-round3-support.js';
export { STORE_JS, notesTool, ALLOW_NOTES, allText, modelContext } from './adv-round4-support.js';

export const TOKEN = 'R5SECRETvalue-7Hq2Zx9Lm';

/** The environment of one scenario: its own state directory and key directory. */
export function stateEnv(scratch: Scratch, name: string): Record<string, string> {
  return { CFH_STATE_DIR: scratch.path(`state-${name}`), CFH_KEY_DIR: scratch.path('keys') };
}

export interface Snap {
  cfc: {
    mounts: {
      target: string;
      label?: { confidentiality?: string[]; integrity?: string[] };
      labelSource?: string;
      writtenBy?: string[];
    }[];
    env?: unknown[];
  };
}

export async function snapshotOf(dir: string): Promise<Snap> {
  return JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as Snap;
}

export async function eventsText(dir: string): Promise<string> {
  return readFile(path.join(dir, 'events.jsonl'), 'utf8').catch(() => '');
}
