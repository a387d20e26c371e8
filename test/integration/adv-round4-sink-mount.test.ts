// Adversarial round 4, class 4 (a sink is a source of what it may receive). A host tool
// cleared for a secret hands what it kept back labelled with its clearance, when read back
// through the tool. But what the tool keeps may also be a file in a tree the run mounts: cfh
// refuses a host tool's paths inside an rw mount, and lets its `cwd` and its other paths lie
// in a read-only one ("Its cwd may be inside a read-only mount"). Here the notes store the
// tool writes lies in a directory mounted read-only, labelled as the operator labels what
// the agent may browse. The secret goes in through the cleared tool and comes out through
// read_file under the mount's label, exposed to the model. This test asserts cfh holds (the
// plan is refused, or the read carries the tool's clearance): the secret never reaches the
// model's context.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, useScratch } from './helpers.js';
import {
  ALLOW_NOTES,
  SECRET,
  STORE_JS,
  modelContext,
  notesTool,
  yamlFile,
} from './adv-round4-support.js';

const scratch = useScratch('adv4-sink-mount');

describe('adv round 4: a cleared host tool writes where a mount reads lower', () => {
  it("a secret passed to a cleared host tool does not come back through a read-only mount of the tool's store", async () => {
    const ws = await scratch.sampleRepo();
    const tools = scratch.path('tools');
    const notes = scratch.path('notes');
    const secrets = scratch.path('secrets');
    for (const d of [tools, notes, secrets]) await mkdir(d, { recursive: true });
    await writeFile(path.join(tools, 'store.mjs'), STORE_JS);
    await writeFile(path.join(secrets, 'token'), SECRET);
    const store = path.join(notes, 'notes.txt');
    await writeFile(store, '');
    const art = scratch.path('art');
    await mkdir(art, { recursive: true });
    const profile = await yamlFile(scratch, 'profile.yaml', {
      extends: 'default',
      name: 'sink-mount',
      description: 'a notes tool cleared for the secret, its notes readable by the agent',
      tools: ['read_file', 'list_dir'],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
        { source: notes, target: '/notes', mode: 'ro', label: { integrity: ['ops'] } },
      ],
      hostTools: [notesTool(tools, store, { clearance: ['secret'] })],
      policy: ALLOW_NOTES,
    });
    const script = await yamlFile(scratch, 'script.yaml', {
      turns: [
        { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
        { tool_calls: [{ name: 'host__notes', input: { op: 'put', text: '{{handle:1}}' } }] },
        { tool_calls: [{ name: 'read_file', input: { path: '/notes/notes.txt' } }] },
        { text: 'done' },
      ],
    });
    const run = await cfh(agentRunArgs({ workspace: ws, artifactRoot: art, profile, script }));
    const dir = await onlyRunDir(art).catch(() => undefined);
    const context = dir === undefined ? '' : await modelContext(dir);
    const stored = await readFile(store, 'utf8');
    if (process.env.ADV4_DEBUG) console.log(run.stderr, stored);
    // cfh holds: the plan refused, the tool not reached, or the read not exposed.
    expect(stored.includes(SECRET) && context.includes(SECRET)).toBe(false);
  });
});
