// One host tool state, one clearance, by identity and not by spelling
// (engine/cfc/host-tool-identity.ts, host-tool-sharing.ts): a program is found as the launcher
// finds it and known through its links; a script is the first argument naming an existing
// regular file, against the real cwd; other path arguments compare by real path; a program
// the launcher cannot find is taken for the other's.
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { checkHostToolSharing } from '../../src/engine/cfc/host-tool-sharing.js';

const NODE = process.execPath;
let dir: string;
const at = (...p: string[]): string => path.join(dir, ...p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-identity-'));
  for (const d of ['tools', 'bin', 'work', 'data']) await mkdir(at(d));
  for (const s of ['store.mjs', 'other.mjs']) await writeFile(at('tools', s), '');
  // An executable script (`#!`), run by name or handed to its interpreter.
  await writeFile(at('tools', 'run.mjs'), '#!/usr/bin/env node\n');
  await chmod(at('tools', 'run.mjs'), 0o755);
  await writeFile(at('bin', 'notes-tool'), '#!/bin/sh\n');
  await chmod(at('bin', 'notes-tool'), 0o755);
  await symlink(at('bin', 'notes-tool'), at('bin', 'alias'));
  await symlink(at('tools'), at('tools-link'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function tool(name: string, argv: string[], fields: Record<string, unknown> = {}) {
  return {
    name,
    kind: 'exec',
    argv: [...argv, '{op}'],
    cwd: at('tools'),
    input: { op: { type: 'string', pattern: 'get|put' } },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    ...fields,
  };
}

const SECRET = { clearance: ['secret'] };

/** Runs the check over two entries, `b` cleared for `secret`, under `searchPath`. */
function check(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  searchPath = '/usr/bin:/bin',
): () => void {
  const profile = Profile.parse({ ...loadProfile('default').profile, hostTools: [a, b] });
  return () => {
    checkHostToolSharing(profile, 0, searchPath);
  };
}

describe('host tool state by identity', () => {
  it('refuses one script spelled by absolute path and relative to the cwd', () => {
    expect(
      check(tool('a', [NODE, './store.mjs']), tool('b', [NODE, at('tools', 'store.mjs')], SECRET)),
    ).toThrow(
      `hostTools a (this run) and b (this run) run the same command: one script, '${at('tools', 'store.mjs')}' (given as './store.mjs' and '${at('tools', 'store.mjs')}')`,
    );
  });

  it('refuses one script through ../ from another cwd, and through a linked directory', () => {
    const up = tool('a', [NODE, '../tools/store.mjs'], { cwd: at('work') });
    expect(check(up, tool('b', [NODE, at('tools', 'store.mjs')], SECRET))).toThrow(/one script/);
    const linked = tool('a', [NODE, at('tools-link', 'store.mjs')], { cwd: at('work') });
    expect(check(linked, tool('b', [NODE, 'store.mjs'], SECRET))).toThrow(/one script/);
  });

  it('refuses one script behind interpreter flags; lets it be given other arguments', () => {
    const flagged = tool('a', [NODE, '--no-warnings', './store.mjs']);
    expect(check(flagged, tool('b', [NODE, 'store.mjs'], SECRET))).toThrow(/one script/);
    // Its own arguments say where it keeps its state (a store each): the operator's word.
    const other = tool('a', [NODE, './store.mjs', '--store', 'a.json']);
    expect(check(other, tool('b', [NODE, 'store.mjs'], SECRET))).not.toThrow();
  });

  it('lets two scripts of one interpreter be under two clearances', () => {
    expect(
      check(tool('a', [NODE, './store.mjs']), tool('b', [NODE, './other.mjs'], SECRET)),
    ).not.toThrow();
  });

  it('refuses a program through a link and by its own path', () => {
    expect(
      check(tool('a', [at('bin', 'alias')]), tool('b', [at('bin', 'notes-tool')], SECRET)),
    ).toThrow(
      `run the same command with the same settings ('${at('bin', 'notes-tool')}', given as '${at('bin', 'alias')}' and '${at('bin', 'notes-tool')}')`,
    );
  });

  it('refuses a program found through PATH and by its absolute path', () => {
    expect(
      check(tool('a', ['notes-tool']), tool('b', [at('bin', 'notes-tool')], SECRET), at('bin')),
    ).toThrow(
      `run the same command with the same settings ('${at('bin', 'notes-tool')}', given as 'notes-tool' and`,
    );
  });

  it('refuses a #! script run by name and handed to its interpreter', () => {
    expect(
      check(tool('a', ['./run.mjs']), tool('b', [NODE, at('tools', 'run.mjs')], SECRET)),
    ).toThrow(/one file, '.*run\.mjs', one as its program \('\.\/run\.mjs'\)/);
  });

  it('compares path arguments by real path, and lets different settings be', () => {
    const cwdData = { cwd: at('work') };
    expect(
      check(
        tool('a', [at('bin', 'notes-tool'), '--dir=../data'], cwdData),
        tool('b', [at('bin', 'notes-tool'), `--dir=${at('data')}`], { ...cwdData, ...SECRET }),
      ),
    ).toThrow(/same command with the same settings/);
    expect(
      check(
        tool('a', [at('bin', 'notes-tool'), '--dir=../data'], cwdData),
        tool('b', [at('bin', 'notes-tool'), `--dir=${at('work')}`], { ...cwdData, ...SECRET }),
      ),
    ).not.toThrow();
  });

  it('compares the cwd by its real path', () => {
    expect(
      check(
        tool('a', [at('bin', 'notes-tool')], { cwd: at('tools-link') }),
        tool('b', [at('bin', 'notes-tool')], SECRET),
      ),
    ).toThrow(/same command with the same settings/);
  });

  it('takes a program it cannot find for the other, naming it', () => {
    expect(
      check(tool('a', ['cfh-no-such-tool']), tool('b', [at('bin', 'notes-tool')], SECRET)),
    ).toThrow(
      "as far as cfh can tell: program 'cfh-no-such-tool' is not found (or not executable) now, so it may be the other's",
    );
    // Its settings still tell it apart.
    expect(
      check(tool('a', ['cfh-no-such-tool', '--x']), tool('b', [at('bin', 'notes-tool')], SECRET)),
    ).not.toThrow();
  });
});
