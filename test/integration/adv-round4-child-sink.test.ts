// Adversarial round 4, class 5/4 (a child's clearance on what its parent hands on; a sink is a
// source of what it may receive). cfh caps a child's clearance on a *tree* its parent hands
// on by the parent's label, so a child profile clearing the shared workspace for a secret no
// longer writes it where the parent reads it lower. A host tool is a sink and a source the
// same way ("a store, an MCP server's graph, a log"), and parent and child may both declare
// it: here both declare the same notes store, identical but for the child's `clearance:
// [secret]`. The child reads its own secret mount and writes the secret to the store (its
// profile clears the store for it); the parent reads the store back under its own entry,
// which clears nothing, so the result is exposed to the parent's model. This test asserts
// cfh holds: the secret never reaches the parent's model context.
import { mkdir, writeFile } from 'node:fs/promises';
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

const scratch = useScratch('adv4-child-sink');

describe('adv round 4: a store a child is cleared for, read back by its parent', () => {
  it('the parent model never sees a secret its child wrote to a host tool the parent reads lower', async () => {
    const ws = await scratch.sampleRepo();
    const tools = scratch.path('tools');
    const secrets = scratch.path('secrets');
    await mkdir(tools, { recursive: true });
    await mkdir(secrets, { recursive: true });
    await writeFile(path.join(tools, 'store.mjs'), STORE_JS);
    await writeFile(path.join(secrets, 'token'), SECRET);
    const store = path.join(tools, 'notes.txt');
    const art = scratch.path('art');
    await mkdir(art, { recursive: true });
    const cfc = { mode: 'enforce-explicit', modelClearance: [] };
    const profile = await yamlFile(scratch, 'parent.yaml', {
      extends: 'default',
      name: 'parent',
      description: 'a parent with a notes store and a worker child',
      tools: ['read_file', 'list_dir'],
      cfc,
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      hostTools: [notesTool(tools, store, {})],
      policy: ALLOW_NOTES,
      children: {
        worker: {
          description: 'stores a token',
          tools: ['read_file'],
          cfc,
          workspace: { mode: 'ro', label: { integrity: ['repo'] } },
          mounts: [
            {
              source: secrets,
              target: '/secrets',
              mode: 'ro',
              label: { confidentiality: ['secret'] },
            },
          ],
          // The same store, cleared for the secret in the child's profile.
          hostTools: [notesTool(tools, store, { clearance: ['secret'] })],
          policy: ALLOW_NOTES,
        },
      },
    });
    const script = await yamlFile(scratch, 'script.yaml', {
      turns: [
        { tool_calls: [{ name: 'delegate', input: { profile: 'worker', task: 'store it' } }] },
        { tool_calls: [{ name: 'host__notes', input: { op: 'get', text: 'x' } }] },
        { text: 'done' },
      ],
      children: {
        worker: {
          turns: [
            { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
            {
              tool_calls: [{ name: 'host__notes', input: { op: 'put', text: '{{handle:1}}' } }],
            },
            { text: 'stored' },
          ],
        },
      },
    });
    const run = await cfh(agentRunArgs({ workspace: ws, artifactRoot: art, profile, script }));
    // cfh may hold by refusing the plan, for this reason only (nothing ran, nothing stored).
    if (refusedAsShared(run)) return;
    const dir = await onlyRunDir(art);
    const context = await modelContext(dir);
    // Preconditions: the run went as scripted (the child stored the secret).
    expect(run.stderr).not.toMatch(/exit 125/);
    const { readFile } = await import('node:fs/promises');
    const stored = await readFile(store, 'utf8').catch(() => '');
    // cfh holds: either the child could not store it, or the parent's model never sees it.
    expect(stored.includes(SECRET) && context.includes(SECRET)).toBe(false);
  });

  it("a child model never sees a secret its parent wrote to a host tool the child's profile reads lower", async () => {
    const ws = await scratch.sampleRepo();
    const tools = scratch.path('tools2');
    const secrets = scratch.path('secrets2');
    await mkdir(tools, { recursive: true });
    await mkdir(secrets, { recursive: true });
    await writeFile(path.join(tools, 'store.mjs'), STORE_JS);
    await writeFile(path.join(secrets, 'token'), SECRET);
    const store = path.join(tools, 'notes.txt');
    const art = scratch.path('art2');
    await mkdir(art, { recursive: true });
    const cfc = { mode: 'enforce-explicit', modelClearance: [] };
    const profile = await yamlFile(scratch, 'parent2.yaml', {
      extends: 'default',
      name: 'parent2',
      description: 'a parent cleared to store the secret, and a reader child',
      tools: ['read_file', 'list_dir'],
      cfc,
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      hostTools: [notesTool(tools, store, { clearance: ['secret'] })],
      policy: ALLOW_NOTES,
      children: {
        reader: {
          description: 'reads the notes',
          tools: ['read_file'],
          cfc,
          workspace: { mode: 'ro', label: { integrity: ['repo'] } },
          hostTools: [notesTool(tools, store, {})],
          policy: ALLOW_NOTES,
        },
      },
    });
    const script = await yamlFile(scratch, 'script2.yaml', {
      turns: [
        { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
        { tool_calls: [{ name: 'host__notes', input: { op: 'put', text: '{{handle:1}}' } }] },
        { tool_calls: [{ name: 'delegate', input: { profile: 'reader', task: 'read notes' } }] },
        { text: 'done' },
      ],
      children: {
        reader: {
          turns: [
            { tool_calls: [{ name: 'host__notes', input: { op: 'get', text: 'x' } }] },
            { text: 'read' },
          ],
        },
      },
    });
    const run = await cfh(agentRunArgs({ workspace: ws, artifactRoot: art, profile, script }));
    if (refusedAsShared(run)) return;
    const dir = await onlyRunDir(art);
    const { readFile } = await import('node:fs/promises');
    const stored = await readFile(store, 'utf8').catch(() => '');
    const contexts = await transcriptsUnder(dir);
    // cfh holds: either the parent could not store it, or no model context holds it.
    expect(stored.includes(SECRET) && contexts.includes(SECRET)).toBe(false);
  });
});

/**
 * The plan refused because two entries of one host tool state carry different clearances
 * (engine/cfc/host-tool-sharing.ts): a defence, added after this round; any other refusal is not.
 */
function refusedAsShared(run: { exitCode: number; stderr: string }): boolean {
  if (run.exitCode !== 125) return false;
  expect(run.stderr).toMatch(/under different clearances/);
  return true;
}

/** Every transcript under a run directory (its own and its children's), concatenated. */
async function transcriptsUnder(dir: string): Promise<string> {
  const { readdir, readFile } = await import('node:fs/promises');
  let out = '';
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out += await transcriptsUnder(p);
    else if (e.name === 'transcript.jsonl') out += await readFile(p, 'utf8');
  }
  return out;
}
