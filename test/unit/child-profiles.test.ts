// Child profiles resolved (AH-DEL-1/2, AH-CFC-12a): each entry over its own base, never the
// parent's; a ceiling refuses every source it does not cover, an unlabelled one included;
// children below the depth bound are refused at the top profile's load.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveChild, resolveChildren } from '../../src/config/child-profiles.js';
import { loadProfile } from '../../src/config/profile-loader.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cfh-child-profiles-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});
let n = 0;
function profileFile(body: unknown): string {
  n += 1;
  const file = path.join(dir, `p${String(n)}.yaml`);
  writeFileSync(file, JSON.stringify(body));
  return file;
}
const parent = (children: unknown, extra: Record<string, unknown> = {}) =>
  loadProfile(
    profileFile({ extends: 'default', name: 'parent', tools: ['exec'], ...extra, children }),
  ).profile;

describe('child profiles', () => {
  it("layers a child over its own base, never over the parent's", () => {
    const p = parent(
      { kid: { description: 'k', tools: ['read_file'] } },
      {
        network: { mode: 'open' },
        env: { PARENT_SECRET: 'x' },
      },
    );
    const kid = resolveChild(p, 'kid');
    expect(kid.loaded.sources).toEqual(['builtin:default', 'parent#children.kid']);
    expect(kid.loaded.profile.name).toBe('parent.kid');
    expect(kid.loaded.profile.tools).toEqual(['read_file']);
    expect(kid.loaded.profile.network.mode).toBe('disabled');
    expect(kid.loaded.profile.env).toEqual({});
  });

  it('resolves a child file named by extends relative to the parent file', () => {
    const base = profileFile({ extends: 'untrusted-repo', name: 'base-kid', tools: ['grep'] });
    const p = parent({ kid: { extends: `./${path.basename(base)}`, description: 'k' } });
    const kid = resolveChild(p, 'kid');
    expect(kid.loaded.sources).toEqual([
      'builtin:default',
      'builtin:untrusted-repo',
      base,
      'parent#children.kid',
    ]);
    expect(kid.loaded.profile.tools).toEqual(['grep']);
  });

  it('refuses a source above the ceiling, an unlabelled one included', () => {
    const labelled = parent({
      kid: {
        description: 'k',
        mounts: [{ source: dir, target: '/data', label: { confidentiality: ['secret'] } }],
        ceiling: { confidentiality: ['internal'] },
      },
    });
    expect(() => resolveChild(labelled, 'kid')).toThrow(
      "child kid: mount /data is labelled [secret], above the child's ceiling [internal]",
    );
    const unlabelled = parent({
      kid: {
        description: 'k',
        mounts: [{ source: dir, target: '/data' }],
        ceiling: { confidentiality: [] },
      },
    });
    expect(() => resolveChild(unlabelled, 'kid')).toThrow(
      /mount \/data is labelled \[unlabelled\]/,
    );
    const within = parent({
      kid: {
        description: 'k',
        mounts: [{ source: dir, target: '/data', label: { confidentiality: ['internal'] } }],
        cfc: { modelClearance: ['internal', 'secret'] },
        ceiling: { confidentiality: ['internal'] },
      },
    });
    // The model's clearance is cut to the ceiling.
    expect(resolveChild(within, 'kid').loaded.profile.cfc.modelClearance).toEqual(['internal']);
  });

  it('counts what a sink may be sent as what it hands back (a cleared sink is a source)', () => {
    const kid = (extra: Record<string, unknown>) =>
      parent({ kid: { description: 'k', ceiling: { confidentiality: [] }, ...extra } });
    expect(() =>
      resolveChild(
        kid({
          network: {
            mode: 'allowlist',
            allow: ['store.test:80'],
            clearance: { 'store.test:80': ['secret'] },
          },
        }),
        'kid',
      ),
    ).toThrow("child kid: destination store.test:80 is labelled [secret], above the child's");
    expect(() =>
      resolveChild(
        kid({
          mounts: [{ source: dir, target: '/out', mode: 'rw', label: {}, clearance: ['secret'] }],
        }),
        'kid',
      ),
    ).toThrow(/mount \/out is labelled \[secret\]/);
    const server = {
      name: 'memory',
      kind: 'mcp',
      command: '/usr/bin/node',
      resultLabel: {},
      tools: [
        { name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' },
        {
          name: 'create_entities',
          riskClass: 'write_internal',
          sideEffectClass: 'internal_state_change',
          clearance: ['secret'],
        },
      ],
    };
    expect(() => resolveChild(kid({ hostTools: [server] }), 'kid')).toThrow(
      /host tool memory is labelled \[secret\]/,
    );
  });

  it('refuses children deeper than the depth bound, at the top profile', () => {
    const grandchild = profileFile({
      extends: 'default',
      name: 'mid',
      children: { leaf: { description: 'leaf' } },
    });
    const p = parent(
      { mid: { extends: grandchild, description: 'mid' } },
      { budgets: { maxDelegationDepth: 1 } },
    );
    expect(() => resolveChildren(p, 1)).toThrow(
      /lists children \(leaf\) deeper than delegation may go/,
    );
    expect(resolveChildren(p, 2).map((c) => c.name)).toEqual(['mid']);
  });

  it('names an unknown child', () => {
    expect(() => resolveChild(parent({}), 'ghost')).toThrow('profile parent has no child ghost');
  });
});
