// Class: store trees of every host tool the run OR ANY DESCENDANT child profile can call count
// for the run's mounts at planning (engine/cfc/host-tool-tree.ts, cfc-plan.ts; AH-CFC-2,
// AH-CFC-12): a parent's mount holding a store a child's cleared host tool names carries that
// tool's clearance, so what the child's tool keeps there is not read under the parent's label.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { planRunCfc } from '../../src/engine/cfc/cfc-plan.js';
import { treeHostTools } from '../../src/engine/cfc/host-tool-tree.js';

let dir: string;
const at = (...p: string[]): string => path.join(dir, ...p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-tree-'));
  for (const d of ['ws', 'store', 'tools']) await mkdir(at(d));
  await writeFile(at('store', 'notes.txt'), '');
  await writeFile(at('tools', 'save.py'), '');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function parent(childClearance: string[]): Profile {
  return Profile.parse({
    ...loadProfile('default').profile,
    cfc: { mode: 'enforce-explicit', modelClearance: [] },
    workspace: { mode: 'ro', label: { integrity: ['user'] } },
    mounts: [{ source: at('store'), target: '/store', mode: 'ro', label: { integrity: ['user'] } }],
    children: {
      vault: {
        description: 'files tokens',
        hostTools: [
          {
            name: 'save',
            kind: 'exec',
            argv: ['python3', at('tools', 'save.py'), '{v}'],
            cwd: at('tools'),
            env: { STORE: { value: at('store', 'notes.txt') } },
            input: { v: { type: 'string', pattern: '[a-z]+' } },
            riskClass: 'write_local',
            sideEffectClass: 'local_artifact',
            resourceScope: 'project',
            resultLabel: { integrity: ['ops'] },
            clearance: childClearance,
          },
        ],
      },
    },
  });
}

function storeLabel(p: Profile): readonly string[] {
  const mounts = [
    { source: at('ws'), target: '/workspace', mode: 'ro' as const },
    { source: at('store'), target: '/store', mode: 'ro' as const },
  ];
  const plan = planRunCfc(p, mounts, [], '/workspace', {});
  return plan.mounts.find((m) => m.target === '/store')?.label?.confidentiality ?? [];
}

describe('class: descendant host-tool stores count for the run mounts at planning', () => {
  it('lists a child profile host tool with the run own, by place', () => {
    expect(treeHostTools(parent(['secret']), 2).map((t) => `${t.where}: ${t.entry.name}`)).toEqual([
      'child vault: save',
    ]);
  });

  it("a parent mount holding a child's cleared store carries the tool's clearance", () => {
    expect(storeLabel(parent(['secret']))).toEqual(['secret']);
    expect(storeLabel(parent([]))).toEqual([]);
  });
});
