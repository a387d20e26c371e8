// Class: paths in host-tool arguments and env values are resolved as the tool's program would
// resolve them (`~`, `~user`, `$HOME`, the entry's own env) before they are compared, and a
// spelling cfh cannot resolve fails closed (engine/cfc/host-tool-spelling.ts). Class: argv is
// compared with its placeholders normalised: a `{field}` is a model-chosen value, whatever its
// name (host-tool-identity.ts). Both: AH-CFC-2, AH-CFC-12.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { checkHostToolSharing } from '../../src/engine/cfc/host-tool-sharing.js';
import { expandSpelling } from '../../src/engine/cfc/host-tool-spelling.js';
import { namedPaths } from '../../src/engine/cfc/host-tool-stores.js';
import { HostToolEntry } from '../../src/config/host-tools-schema.js';

const HOME = os.userInfo().homedir;
let dir: string;
const at = (...p: string[]): string => path.join(dir, ...p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-spelling-'));
  await mkdir(at('tools'));
  for (const f of ['w.py', 'r.py', 'kv.py']) await writeFile(at('tools', f), '');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function tool(name: string, argv: string[], clearance: string[], extra = {}) {
  const fields = argv.filter((a) => /^\{\w+\}$/.test(a)).map((a) => a.slice(1, -1));
  return {
    name,
    kind: 'exec',
    argv,
    cwd: at('tools'),
    input: Object.fromEntries(fields.map((f) => [f, { type: 'string', pattern: '[a-z]+' }])),
    riskClass: 'read_only',
    sideEffectClass: 'none',
    resultLabel: { integrity: ['ops'] },
    clearance,
    ...extra,
  };
}

function check(a: Record<string, unknown>, b: Record<string, unknown>): () => void {
  const profile = Profile.parse({ ...loadProfile('default').profile, hostTools: [a, b] });
  return () => {
    checkHostToolSharing(profile, 0, '/usr/bin:/bin');
  };
}

describe('class: host-tool paths are resolved as the tool would before comparison', () => {
  it('expands ~, ~user, $HOME and the entry env, and says what it cannot resolve', () => {
    expect(expandSpelling('~/x', {})).toEqual({ text: `${HOME}/x` });
    expect(expandSpelling('--db=~/x', {})).toEqual({ text: `--db=${HOME}/x` });
    expect(expandSpelling('~root/x', {})).toEqual({ text: '/root/x' });
    expect(expandSpelling('$HOME/x', { HOME: '/h' })).toEqual({ text: '/h/x' });
    expect(expandSpelling('${DATA}/n.txt', { DATA: '/srv' })).toEqual({ text: '/srv/n.txt' });
    expect(expandSpelling('$NOPE/x', {})).toEqual({
      unresolved: "'$NOPE' (its environment does not set NOPE)",
    });
    expect(expandSpelling('~no-such-user-cfh/x', {})).toHaveProperty('unresolved');
    expect(expandSpelling('^a$', {})).toEqual({ text: '^a$' });
  });

  it('refuses one store named ~/x by one entry and by its absolute path by another', () => {
    const store = path.join(HOME, 'cfh-unit-store.txt');
    expect(
      check(
        tool('jot', ['python3', 'w.py', '~/cfh-unit-store.txt', '{v}'], ['secret']),
        tool('show', ['python3', 'r.py', store], []),
      ),
    ).toThrow(`both name '${store}'`);
    expect(
      check(
        tool('jot', ['python3', 'w.py', '{v}'], ['secret'], {
          env: { STORE: { value: '$HOME/cfh-unit-store.txt' } },
        }),
        tool('show', ['python3', 'r.py', '{v}'], [], { env: { STORE: { value: store } } }),
      ),
    ).toThrow(`both name '${store}'`);
  });

  it('fails closed on a spelling it cannot resolve', () => {
    expect(
      check(
        tool('jot', ['python3', 'w.py', '$STATE_DIR/n.txt', '{v}'], ['secret']),
        tool('show', ['python3', 'r.py', '/srv/elsewhere.txt'], []),
      ),
    ).toThrow(/cfh cannot resolve '\$STATE_DIR' \(its environment does not set STATE_DIR\) of jot/);
  });

  it('names the store a mount label counts by its resolved path', () => {
    const entry = HostToolEntry.parse(tool('jot', ['python3', 'w.py', '~/n.txt', '{v}'], []));
    expect(namedPaths(entry)).toContain(path.join(HOME, 'n.txt'));
  });
});

describe('class: argv is compared with placeholders normalised (a model-chosen value)', () => {
  it('refuses one script whose two entries differ only in their placeholder names', () => {
    expect(
      check(
        tool('stash', ['python3', 'kv.py', '{cmd}', '{v}'], ['secret']),
        tool('recall', ['python3', 'kv.py', '{op}', '{key}'], []),
      ),
    ).toThrow(/run the same command: one script, '.*kv\.py'.*with the same settings/);
  });

  it('still tells apart one script given another literal setting', () => {
    expect(
      check(
        tool('stash', ['python3', 'kv.py', '--db', 'a.db', '{v}'], ['secret']),
        tool('recall', ['python3', 'kv.py', '--db', 'b.db', '{k}'], []),
      ),
    ).not.toThrow();
  });
});
