// The bounds every input meets before anything is created (AH-INV-4): the bounded reader's
// caps are exact (the limit is accepted, one byte more is not) for both of its forms; links
// are refused only where asked; pseudo file systems are known by statfs; engine limits at
// their boundaries.
import { mkdir, rename, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readInputFile, readInputFileSync } from '../../src/config/input-file.js';
import { checkEngineLimits } from '../../src/config/engine-limits.js';
import { pseudoFileSystemAt, pseudoTreeOf } from '../../src/config/pseudo-fs.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { ConfigError } from '../../src/errors.js';
import { expectConfigError, makeTempDir, removeTempDir } from './helpers.js';

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir('input-bounds');
});
afterEach(async () => {
  await removeTempDir(dir);
});

const never = new AbortController().signal;

describe('the bounded reader', () => {
  it('accepts exactly the cap and refuses one byte more, sync and async', async () => {
    const at = path.join(dir, 'at-cap');
    const over = path.join(dir, 'over-cap');
    await writeFile(at, 'a'.repeat(100));
    await writeFile(over, 'a'.repeat(101));
    const req = (file: string) => ({ label: '--context', file, maxBytes: 100 });
    expect(readInputFileSync(req(at))).toHaveLength(100);
    expect(await readInputFile(req(at), never)).toHaveLength(100);
    expectConfigError(() => readInputFileSync(req(over)), 'input_file_too_large', '101 bytes');
    await expect(readInputFile(req(over), never)).rejects.toMatchObject({
      code: 'input_file_too_large',
    });
  });

  it('follows links for profiles and scripts, refuses them for prompt material', async () => {
    const real = path.join(dir, 'real.txt');
    await writeFile(real, 'ok');
    await mkdir(path.join(dir, 'd'));
    await symlink(real, path.join(dir, 'd', 'link.txt'));
    const file = path.join(dir, 'd', 'link.txt');
    expect(readInputFileSync({ label: '--script', file, maxBytes: 10 })).toBe('ok');
    await expect(
      readInputFile({ label: '--quote', file, maxBytes: 10, noSymlinks: true }, never),
    ).rejects.toMatchObject({ code: 'input_file_symlink' });
  });

  it('names a missing file, and stops when the run is cancelled', async () => {
    expectConfigError(
      () => readInputFileSync({ label: '--script', file: path.join(dir, 'nope'), maxBytes: 1 }),
      'input_file_unreadable',
      'does not exist',
    );
    const real = path.join(dir, 'real.txt');
    await writeFile(real, 'ok');
    const cancelled = new AbortController();
    cancelled.abort(new Error('SIGINT'));
    const error: unknown = await readInputFile(
      { label: '--context', file: real, maxBytes: 10, noSymlinks: true },
      cancelled.signal,
    ).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe('SIGINT');
  });

  it('reads a prompt file only as the object its label was found for (a swap after labelling)', async () => {
    const file = path.join(dir, 'slot.txt');
    await writeFile(file, 'labelled');
    const labelled = await stat(file);
    const expect_ = { dev: String(labelled.dev), ino: String(labelled.ino) };
    const req = { label: '--context', file, maxBytes: 100, noSymlinks: true, expect: expect_ };
    expect(await readInputFile(req, never)).toBe('labelled');
    // Another object put at the path since (rename over it): refused, not read.
    await writeFile(path.join(dir, 'other.txt'), 'secret');
    await rename(path.join(dir, 'other.txt'), file);
    await expect(readInputFile(req, never)).rejects.toMatchObject({
      code: 'input_file_changed',
      message: `--context: '${file}' changed since cfh labelled it; not read`,
    });
  });

  it('bounds every layer of an extends chain', async () => {
    await writeFile(path.join(dir, 'base.yaml'), `name: base\n#${'z'.repeat(256 * 1024)}\n`);
    await writeFile(path.join(dir, 'child.yaml'), 'extends: base.yaml\nname: child\n');
    expectConfigError(
      () => loadProfile(path.join(dir, 'child.yaml')),
      'input_file_too_large',
      'base.yaml',
      '262144-byte limit',
    );
  });
});

describe('pseudo file systems', () => {
  it('are known by statfs and, for /proc /sys /dev, by path', () => {
    expect(pseudoFileSystemAt('/proc')).toBe('proc');
    expect(pseudoFileSystemAt('/sys')).toBe('sysfs');
    expect(pseudoFileSystemAt('/dev/pts')).toBe('devpts');
    expect(pseudoFileSystemAt(dir)).toBeUndefined();
    expect(pseudoTreeOf('/dev/shm/x')).toBe('/dev');
    expect(pseudoTreeOf('/device')).toBeUndefined();
    expect(pseudoTreeOf('/sys')).toBe('/sys');
  });
});

describe('engine limits', () => {
  const base = {
    memory: '1g',
    cpus: 1,
    pids: 256,
    wallTimeSeconds: 60,
    outputBytes: '1m',
    tmpfs: '64m',
  };

  it('accept the boundaries', () => {
    expect(() => {
      checkEngineLimits({ ...base, memory: '6m', cpus: 0.01, tmpfs: '4096b' }, {}, 2);
    }).not.toThrow();
    expect(() => {
      checkEngineLimits({ ...base, cpus: 2 }, {}, 2);
    }).not.toThrow();
  });

  it('refuse one step past them, naming the flag when a flag set the limit', () => {
    expectConfigError(
      () => {
        checkEngineLimits({ ...base, memory: '6291455b' }, { memory: '--memory' }, 2);
      },
      'limit_out_of_range',
      '--memory',
    );
    expectConfigError(
      () => {
        checkEngineLimits({ ...base, cpus: 0.009 }, {}, 2);
      },
      'limit_out_of_range',
      'limits.cpus',
    );
    expectConfigError(
      () => {
        checkEngineLimits({ ...base, cpus: 2.5 }, { cpus: '--cpus' }, 2);
      },
      'limit_out_of_range',
      '--cpus',
      '2 CPU(s)',
    );
    expectConfigError(
      () => {
        checkEngineLimits({ ...base, tmpfs: '4095b' }, {}, 2);
      },
      'limit_out_of_range',
      'limits.tmpfs',
    );
  });
});
