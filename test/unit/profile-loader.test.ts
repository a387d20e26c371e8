import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listBuiltinProfiles, loadProfile, mergeLayer } from '../../src/config/profile-loader.js';
import { parseSize } from '../../src/config/size.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;

beforeEach(async () => {
  tmp = await makeTempDir('cfh-profile-');
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function dir(): string {
  if (tmp === undefined) throw new Error('temp dir not created');
  return tmp;
}

async function writeProfile(relative: string, body: string): Promise<string> {
  const file = path.join(dir(), relative);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, body);
  return file;
}

describe('built-in profiles', () => {
  it('lists default and untrusted-repo', () => {
    expect(listBuiltinProfiles()).toEqual(expect.arrayContaining(['default', 'untrusted-repo']));
  });

  it('loads default: read-only workspace, no network, the sandbox image', () => {
    const { profile, sources } = loadProfile('default');
    expect(sources).toEqual(['builtin:default']);
    expect(profile).toMatchObject({
      name: 'default',
      image: 'builtin:sandbox',
      runtime: 'runc',
      user: 'auto',
      workspace: { mode: 'ro' },
      mounts: [],
      network: { mode: 'disabled', allow: [], deny: [] },
      limits: {
        memory: '1g',
        cpus: 1,
        pids: 256,
        wallTimeSeconds: 600,
        outputBytes: '8m',
        tmpfs: '64m',
      },
      env: {},
    });
  });

  it('loads untrusted-repo on top of default: rw workspace, tighter limits, inherited rest', () => {
    const base = loadProfile('default').profile;
    const { profile, sources } = loadProfile('untrusted-repo');
    expect(sources).toEqual(['builtin:default', 'builtin:untrusted-repo']);
    expect(profile.name).toBe('untrusted-repo');
    expect(profile.workspace.mode).toBe('rw');
    // Inherited from default, not restated in untrusted-repo.yaml.
    expect(profile.network).toEqual({
      mode: 'disabled',
      allow: [],
      deny: [],
      labels: {},
      clearance: {},
      requires: {},
    });
    expect(profile.image).toBe(base.image);
    expect(profile.runtime).toBe(base.runtime);
    expect(profile.user).toBe(base.user);
    // Tighter than default on every limit it sets.
    expect(parseSize('m', profile.limits.memory)).toBeLessThan(parseSize('m', base.limits.memory));
    expect(profile.limits.pids).toBeLessThan(base.limits.pids);
    expect(profile.limits.wallTimeSeconds).toBeLessThan(base.limits.wallTimeSeconds);
    expect(parseSize('o', profile.limits.outputBytes)).toBeLessThan(
      parseSize('o', base.limits.outputBytes),
    );
    expect(parseSize('t', profile.limits.tmpfs)).toBeLessThan(parseSize('t', base.limits.tmpfs));
    expect(profile.limits.cpus).toBeLessThanOrEqual(base.limits.cpus);
  });

  it('refuses an unknown built-in name with unknown_profile, listing the known ones', () => {
    const error = expectConfigError(
      () => loadProfile('no-such-profile'),
      'unknown_profile',
      "profile 'no-such-profile' not found",
    );
    expect(error.hint).toContain('default, untrusted-repo');
    expect(error.details).toMatchObject({ profile: 'no-such-profile' });
  });

  it('refuses a profile file that does not exist with unknown_profile', () => {
    const missing = path.join(dir(), 'missing.yaml');
    expectConfigError(() => loadProfile(missing), 'unknown_profile', missing);
  });
});

describe('profile files', () => {
  it('extends default and overrides one limit, keeping the others', async () => {
    const file = await writeProfile(
      'custom.yaml',
      'extends: default\nname: custom\nlimits:\n  pids: 64\n',
    );
    const base = loadProfile('default').profile;
    const { profile, sources } = loadProfile(file);
    expect(sources).toEqual(['builtin:default', file]);
    expect(profile.name).toBe('custom');
    expect(profile.limits).toEqual({ ...base.limits, pids: 64 });
    expect(profile.workspace).toEqual(base.workspace);
    expect(profile.network).toEqual(base.network);
  });

  it('names an unknown top-level key', async () => {
    const file = await writeProfile('typo.yaml', 'extends: default\nnmae: oops\n');
    const error = expectConfigError(
      () => loadProfile(file),
      'invalid_profile',
      `profile ${file}:2:1: unknown key 'nmae' at top level`,
    );
    expect(error.hint).toBe("did you mean 'name'?");
  });

  it('names an unknown nested key by its full path', async () => {
    const file = await writeProfile('typo.yaml', 'extends: default\nlimits:\n  memroy: 1g\n');
    const error = expectConfigError(
      () => loadProfile(file),
      'invalid_profile',
      `profile ${file}:3:3: unknown key 'memroy' in limits`,
    );
    expect(error.hint).toBe("did you mean 'memory'?");
  });

  it('names an unknown key nested under network', async () => {
    const file = await writeProfile('typo.yaml', 'extends: default\nnetwork:\n  mod: disabled\n');
    const error = expectConfigError(
      () => loadProfile(file),
      'invalid_profile',
      `profile ${file}:3:3: unknown key 'mod' in network`,
    );
    expect(error.hint).toBe("did you mean 'mode'?");
  });

  // A key near none the schema knows may be anything the file holds (a secret line
  // `AKIA…: x` is a key): located, never quoted, the known keys as the hint.
  it.each([['AKIAIOSFODNN7EXAMPLE'], ['ghp_0123456789abcdef'], ['xyz']])(
    'an unknown key %j far from every known one is located, not quoted',
    async (key) => {
      const file = await writeProfile('secret.yaml', `extends: default\nlimits:\n  ${key}: 1\n`);
      const error = expectConfigError(
        () => loadProfile(file),
        'invalid_profile',
        `profile ${file}:3:3: an unknown key in limits`,
      );
      expect(`${error.message} ${String(error.hint)}`).not.toContain(key);
      expect(error.hint).toMatch(/^known keys: cpus, memory/);
    },
  );

  it('a bad YAML layer: FILE:LINE:COL and the parser code, no excerpt', async () => {
    const file = await writeProfile('bad.yaml', 'extends: default\nname: "secret\nimage: y\n');
    const error = expectConfigError(
      () => loadProfile(file),
      'invalid_profile',
      `profile ${file}:4:1: not valid YAML (`,
    );
    expect(error.message).not.toMatch(/secret|image|\n/);
  });

  it('names an invalid runtime value', async () => {
    const file = await writeProfile('rt.yaml', 'extends: default\nruntime: kata\n');
    expectConfigError(
      () => loadProfile(file),
      'invalid_profile',
      'runtime at line 2, column 10: Invalid option: expected one of "runc"|"runsc"',
    );
  });

  it('refuses a file without extends that lacks required fields, naming one', async () => {
    const file = await writeProfile('bare.yaml', 'name: bare\n');
    expectConfigError(() => loadProfile(file), 'invalid_profile', 'image');
  });

  it('refuses YAML that does not parse', async () => {
    const file = await writeProfile('broken.yaml', 'limits: [unclosed\n');
    expectConfigError(() => loadProfile(file), 'invalid_profile', file);
  });

  it('detects an extends cycle between two files', async () => {
    const a = await writeProfile('a.yaml', 'extends: ./b.yaml\n');
    await writeProfile('b.yaml', 'extends: ./a.yaml\n');
    expectConfigError(() => loadProfile(a), 'profile_extends_cycle', a);
  });

  it('detects a file that extends itself', async () => {
    const self = await writeProfile('self.yaml', 'extends: ./self.yaml\n');
    expectConfigError(() => loadProfile(self), 'profile_extends_cycle');
  });

  it('refuses an extends chain deeper than eight layers', async () => {
    // p0 → p1 → … → p8 → default: ten layers.
    for (let i = 0; i < 9; i += 1) {
      const parent = i === 8 ? 'default' : `./p${i + 1}.yaml`;
      await writeProfile(`p${i}.yaml`, `extends: ${parent}\n`);
    }
    expectConfigError(() => loadProfile(path.join(dir(), 'p0.yaml')), 'profile_extends_too_deep');
  });

  it('accepts a chain of exactly eight layers', async () => {
    // q0 → … → q6 → default: eight layers.
    for (let i = 0; i < 7; i += 1) {
      const parent = i === 6 ? 'default' : `./q${i + 1}.yaml`;
      await writeProfile(`q${i}.yaml`, `extends: ${parent}\n`);
    }
    const { sources } = loadProfile(path.join(dir(), 'q0.yaml'));
    expect(sources).toHaveLength(8);
    expect(sources[0]).toBe('builtin:default');
  });

  it('resolves relative mount sources against the profile file, not the cwd', async () => {
    const file = await writeProfile(
      'profiles/with-mount.yaml',
      'extends: default\nmounts:\n  - source: ../data\n    target: /data\n  - source: ./cache\n    target: /cache\n    mode: rw\n',
    );
    expect(process.cwd()).not.toBe(path.dirname(file));
    const { profile } = loadProfile(file);
    expect(profile.mounts).toEqual([
      { source: path.join(dir(), 'data'), target: '/data', mode: 'ro' },
      { source: path.join(dir(), 'profiles', 'cache'), target: '/cache', mode: 'rw' },
    ]);
  });

  it('resolves a base file’s mounts against the base file and extends against the child', async () => {
    await writeProfile(
      'base/base.yaml',
      'extends: default\nmounts:\n  - source: ./refdata\n    target: /ref\n',
    );
    const child = await writeProfile(
      'child/child.yaml',
      'extends: ../base/base.yaml\nname: child\n',
    );
    const { profile, sources } = loadProfile(child);
    expect(sources).toEqual(['builtin:default', path.join(dir(), 'base', 'base.yaml'), child]);
    expect(profile.mounts).toEqual([
      { source: path.join(dir(), 'base', 'refdata'), target: '/ref', mode: 'ro' },
    ]);
  });

  it('merges env maps across layers and replaces lists', async () => {
    await writeProfile(
      'base.yaml',
      [
        'extends: default',
        'env:',
        '  A: one',
        '  B: two',
        'network:',
        '  allow: [a.example, b.example]',
        'mounts:',
        '  - source: ./x',
        '    target: /x',
        '',
      ].join('\n'),
    );
    const child = await writeProfile(
      'child.yaml',
      [
        'extends: ./base.yaml',
        'env:',
        '  B: three',
        'network:',
        '  allow: [c.example]',
        'mounts: []',
        '',
      ].join('\n'),
    );
    const { profile } = loadProfile(child);
    expect(profile.env).toEqual({ A: 'one', B: 'three' });
    expect(profile.network.allow).toEqual(['c.example']);
    expect(profile.network.mode).toBe('disabled');
    expect(profile.mounts).toEqual([]);
  });
});

describe('mergeLayer', () => {
  it('merges nested objects key by key', () => {
    const merged = mergeLayer(
      { limits: { memory: '1g', pids: 256 }, network: { mode: 'disabled' } },
      { limits: { pids: 64 } },
    );
    expect(merged).toEqual({ limits: { memory: '1g', pids: 64 }, network: { mode: 'disabled' } });
  });

  it('replaces arrays instead of concatenating them', () => {
    expect(mergeLayer({ mounts: ['a', 'b'] }, { mounts: ['c'] })).toEqual({ mounts: ['c'] });
    expect(mergeLayer({ mounts: ['a', 'b'] }, { mounts: [] })).toEqual({ mounts: [] });
    expect(
      mergeLayer({ network: { allow: ['x', 'y'], mode: 'open' } }, { network: { allow: ['z'] } }),
    ).toEqual({ network: { allow: ['z'], mode: 'open' } });
  });

  it('replaces scalars and lets an over value of another shape win', () => {
    expect(mergeLayer({ name: 'a', limits: { pids: 1 } }, { name: 'b', limits: 'none' })).toEqual({
      name: 'b',
      limits: 'none',
    });
    expect(mergeLayer({ mounts: { a: 1 } }, { mounts: ['x'] })).toEqual({ mounts: ['x'] });
    expect(mergeLayer({ env: ['x'] }, { env: { A: '1' } })).toEqual({ env: { A: '1' } });
  });

  it('skips undefined values in the over layer, keeping the base', () => {
    expect(mergeLayer({ name: 'a' }, { name: undefined })).toEqual({ name: 'a' });
  });

  it('does not mutate its inputs', () => {
    const base = { limits: { memory: '1g', pids: 256 } };
    const over = { limits: { pids: 64 } };
    mergeLayer(base, over);
    expect(base).toEqual({ limits: { memory: '1g', pids: 256 } });
    expect(over).toEqual({ limits: { pids: 64 } });
  });
});
