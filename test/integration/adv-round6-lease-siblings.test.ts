// Round 6 (red team): two children of one delegating turn are "one lineage", so the lease of
// one does not refuse the other's write, though neither is the other's parent: a child
// cleared to write a secret into a shared tree writes it while its sibling, planned before
// the write, reads that tree under its own public label and sends the secret to its model.
//
// docs/operators.md, "What a run wrote stays in the tree's label": "while it lives it holds a
// lease on the trees it mounts ...: a write that would carry into one of those trees a
// confidentiality the other run does not read it under is refused before it happens ...
// Runs of one delegation tree do not refuse each other (a child's writes come back to its
// parent under the parent's own rules)". The reason given covers a child and its parent; a
// sibling gets nothing back "under the parent's own rules": it reads the tree under its own
// plan's label. And "The model provider is a sink too: an observation whose confidentiality
// cfc.modelClearance does not cover is never sent to it" (AH-CFC-2/7).
//
// The test asserts the secure behaviour (the reader's model is never sent the secret), so
// it FAILS while the break exists.
import { chmod, chown, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, useScratch } from './helpers.js';
import { dirIn, plainDir, stateEnv, yamlFile } from './adv-round6-support.js';
import { readdir } from 'node:fs/promises';

const scratch = useScratch('adv6-siblings');
const TOKEN = 'TOKEN-SIBLING-5a7QxW2e';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

describe('round 6: leases between siblings of one delegation tree', () => {
  it("a child's secret write into a tree its live sibling reads as public is refused", async () => {
    const env = await stateEnv(scratch, 'sib');
    const art = await plainDir(scratch, 'art');
    const ws = await dirIn(scratch, 'ws');
    await writeFile(path.join(ws, 'README'), 'hello\n');
    await chown(path.join(ws, 'README'), SANDBOX_UID, SANDBOX_UID);
    const secrets = await dirIn(scratch, 'secrets');
    await writeFile(path.join(secrets, 'token'), `${TOKEN}\n`);
    await chmod(path.join(secrets, 'token'), 0o644);
    const shared = await dirIn(scratch, 'shared');

    const parent = await yamlFile(scratch, 'parent', {
      extends: 'default',
      name: 'sib-parent',
      tools: ['read_file'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      children: {
        // Cleared to keep the secret in the shared notes (a deploy-ish child).
        writer: {
          tools: ['read_file', 'write_file'],
          workspace: { mode: 'ro', label: { integrity: ['repo'] } },
          cfc: { mode: 'enforce-explicit', modelClearance: [] },
          mounts: [
            {
              source: secrets,
              target: '/secrets',
              mode: 'ro',
              label: { confidentiality: ['secret'] },
            },
            {
              source: shared,
              target: '/shared',
              mode: 'rw',
              label: { integrity: ['shared'] },
              clearance: ['secret'],
            },
          ],
        },
        // Reads the shared notes as public.
        reader: {
          tools: ['read_file', 'exec'],
          workspace: { mode: 'ro', label: { integrity: ['repo'] } },
          network: { mode: 'disabled' },
          cfc: { mode: 'enforce-explicit', modelClearance: [] },
          mounts: [
            { source: shared, target: '/shared', mode: 'ro', label: { integrity: ['shared'] } },
          ],
        },
      },
    });
    const s = await yamlFile(scratch, 'script', {
      model: 'scripted-sib',
      turns: [
        {
          tool_calls: [
            { name: 'delegate', input: { profile: 'reader', task: 'read the shared notes' } },
            { name: 'delegate', input: { profile: 'writer', task: 'write the notes' } },
          ],
        },
        { text: 'done' },
      ],
      children: {
        writer: {
          turns: [
            { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
            {
              tool_calls: [
                { name: 'write_file', input: { path: '/shared/out.txt', content: '{{handle:1}}' } },
              ],
            },
            { text: 'wrote' },
          ],
        },
        reader: {
          turns: [
            { tool_calls: [{ name: 'exec', input: { command: ['sleep', '8'] } }] },
            { tool_calls: [{ name: 'read_file', input: { path: '/shared/out.txt' } }] },
            { text: 'read' },
          ],
        },
      },
    });
    const r = await cfh(
      [
        'sandbox',
        'run',
        '--profile',
        parent,
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--prompt',
        'go',
        '--script',
        s,
        '--non-interactive',
      ],
      { env },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    // What every model of the tree was sent: the transcripts.
    const transcripts = (await filesUnder(art)).filter(
      (f) => path.basename(f) === 'transcript.jsonl',
    );
    expect(transcripts.length).toBeGreaterThanOrEqual(3);
    const leaked: string[] = [];
    for (const t of transcripts)
      if ((await readFile(t, 'utf8')).includes(TOKEN)) leaked.push(path.relative(art, t));
    // Secure: no model of the tree (modelClearance: [] everywhere) was sent the secret.
    expect(leaked).toEqual([]);
  });
});
