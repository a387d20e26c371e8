// One host tool state, one clearance (engine/cfc/host-tool-sharing.ts): two entries that run the
// same command (by identity: host-tool-identity.test.ts), or whose configurations name a
// common path, under different clearances, in one profile or across its children, are refused at planning.
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { checkHostToolSharing } from '../../src/engine/cfc/host-tool-sharing.js';

const PATH = process.env.PATH;

function tool(name: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    kind: 'exec',
    argv: ['/usr/bin/node', '/opt/notes/store.mjs', '{op}'],
    cwd: '/opt/notes',
    input: { op: { type: 'string', pattern: 'get|put' } },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    ...fields,
  };
}

function profileWith(patch: Record<string, unknown>): Profile {
  return Profile.parse({ ...loadProfile('default').profile, ...patch });
}

describe('checkHostToolSharing', () => {
  it('refuses one command under two clearances, naming both and how to fix it', () => {
    const p = profileWith({
      hostTools: [tool('notes'), tool('vault-notes', { clearance: ['secret'] })],
    });
    expect(() => {
      checkHostToolSharing(p, 2, PATH);
    }).toThrow(
      /hostTools notes \(this run\) and vault-notes \(this run\) run the same command.*, under different clearances \(none; secret\): what one is given the other hands back under its own label/,
    );
  });
  it('refuses two commands naming one store; a child entry counts', () => {
    const store = { env: { STORE: { value: '/srv/notes/n.txt' } } };
    const p = profileWith({
      hostTools: [tool('notes', { ...store, argv: ['/usr/bin/node', '/opt/a.mjs', '{op}'] })],
      children: {
        worker: {
          description: 'stores',
          hostTools: [tool('notes', { ...store, clearance: ['secret'] })],
        },
      },
    });
    expect(() => {
      checkHostToolSharing(p, 2, PATH);
    }).toThrow(/notes \(this run\) and notes \(child worker\) both name '\/srv\/notes\/n\.txt'/);
  });
  it('lets two tools keep their own files in one directory both name', () => {
    const records = { env: { RECORDS: { value: os.tmpdir() } } };
    expect(() => {
      checkHostToolSharing(
        profileWith({
          hostTools: [
            tool('vault', { ...records, argv: ['/usr/bin/node', '/opt/vault.mjs', '{op}'] }),
            tool('deploy', { ...records, clearance: ['secret'] }),
          ],
        }),
        2,
        PATH,
      );
    }).not.toThrow();
  });

  it('lets one state under one clearance be, and two states under two', () => {
    expect(() => {
      checkHostToolSharing(
        profileWith({
          hostTools: [
            tool('a', { clearance: ['secret'] }),
            tool('b', { clearance: ['secret'] }),
            tool('c', { argv: ['/usr/bin/node', '/opt/other.mjs', '{op}'], cwd: '/opt/other' }),
          ],
        }),
        2,
        PATH,
      );
    }).not.toThrow();
  });
});
