// Adversarial round 4, class 5 (a child's clearance on a tree its parent hands on is capped by
// the parent's label: inherited-labels.ts cappedByParents). The cap reads the parent's
// *label* of the tree, and a mount's label there includes its own `clearance` atoms
// (label-map.ts: `confidentiality: [...spec, ...m.extra]`), although its clearance itself was
// capped. So a middle child whose profile clears the shared workspace for `secret` cannot
// write the secret there itself, but it labels the workspace `secret`, and its own child (a
// grandchild cleared the same way, with a secret mount of its own) is capped by that label:
// it may write the secret into the workspace, which the top run reads under its own label,
// with no confidentiality, and shows its model. This test asserts cfh holds.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, useScratch } from './helpers.js';
import { SECRET, modelContext, yamlFile } from './adv-round4-support.js';

const scratch = useScratch('adv4-grandchild');

describe('adv round 4: a grandchild under a middle child whose clearance was capped', () => {
  it("the top run's model never sees a secret a grandchild wrote into the shared workspace", async () => {
    const ws = await scratch.sampleRepo();
    const secrets = scratch.path('secrets');
    await mkdir(secrets, { recursive: true });
    await writeFile(path.join(secrets, 'token'), SECRET);
    const art = scratch.path('art');
    await mkdir(art, { recursive: true });
    const cfc = { mode: 'enforce-explicit', modelClearance: [] };
    const cleared = { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] };
    // The middle child's own profile lists its child (a child entry cannot list children).
    await yamlFile(scratch, 'mid.yaml', {
      extends: 'untrusted-repo',
      name: 'mid',
      description: 'a middle child cleared (and capped) for the secret',
      tools: ['read_file'],
      // Enough of a slice for its child (a child's slice is a share of what is left).
      budgets: { maxModelTurns: 50, maxParallelChildren: 1 },
      cfc,
      workspace: cleared,
      children: {
        leaf: {
          extends: 'untrusted-repo',
          description: 'a grandchild with a secret mount, cleared like its parent',
          tools: ['read_file', 'write_file'],
          cfc,
          workspace: cleared,
          mounts: [
            {
              source: secrets,
              target: '/secrets',
              mode: 'ro',
              label: { confidentiality: ['secret'] },
            },
          ],
        },
      },
    });
    const profile = await yamlFile(scratch, 'top.yaml', {
      extends: 'untrusted-repo',
      name: 'top',
      description: 'a top run whose workspace carries no confidentiality',
      tools: ['read_file', 'list_dir'],
      budgets: { maxModelTurns: 100, maxParallelChildren: 1 },
      cfc,
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      children: {
        mid: {
          extends: './mid.yaml',
          description: 'the middle child',
          cfc,
          workspace: cleared,
          budgets: { maxModelTurns: 50, maxParallelChildren: 1 },
        },
      },
    });
    const script = await yamlFile(scratch, 'script.yaml', {
      turns: [
        { tool_calls: [{ name: 'delegate', input: { profile: 'mid', task: 'go' } }] },
        { tool_calls: [{ name: 'read_file', input: { path: 'notes.txt' } }] },
        { text: 'done' },
      ],
      children: {
        mid: {
          turns: [
            { tool_calls: [{ name: 'delegate', input: { profile: 'leaf', task: 'go' } }] },
            { text: 'mid done' },
          ],
        },
        leaf: {
          turns: [
            { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
            {
              tool_calls: [
                { name: 'write_file', input: { path: 'notes.txt', content: '{{handle:1}}' } },
              ],
            },
            { text: 'leaf done' },
          ],
        },
      },
    });
    const run = await cfh(agentRunArgs({ workspace: ws, artifactRoot: art, profile, script }));
    if (process.env.ADV4_DEBUG) console.log(run.stdout, run.stderr);
    expect(run.stderr).not.toMatch(/exit 125/);
    const written = await readFile(path.join(ws, 'notes.txt'), 'utf8').catch(() => '');
    const context = await modelContext(await onlyRunDir(art));
    // cfh holds: the grandchild could not write it there, or the top model never sees it.
    expect(written.includes(SECRET) && context.includes(SECRET)).toBe(false);
  });
});
