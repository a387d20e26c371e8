// A host path resolved once, to the object the kernel opened (AH-CONT-1): its path and
// identity describe the same object even while someone swaps entries on the path, and every
// symlink the name went through is named, so the caller can ask who could replace it.
import { spawn } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ResolutionError,
  resolveObject,
  spelledWorkingDirectory,
} from '../../src/sandbox/source-resolution.js';
import { makeTempDir, removeTempDir, thrownBy } from './helpers.js';

let tmp = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-resolve-'));
});

afterEach(async () => {
  await removeTempDir(tmp);
});

function identity(p: string): { dev: string; ino: string } {
  const s = statSync(p, { bigint: true });
  return { dev: String(s.dev), ino: String(s.ino) };
}

describe('resolveObject', () => {
  it('a directory named directly: its own path and identity, no links', async () => {
    const d = path.join(tmp, 'd');
    await mkdir(d);
    expect(resolveObject(d)).toMatchObject({
      real: d,
      identity: identity(d),
      kind: 'directory',
      links: [],
      pseudoFileSystem: undefined,
    });
  });

  it('a chain of symlinks: the object at its end, and every link on the way', async () => {
    await mkdir(path.join(tmp, 'a/b'), { recursive: true });
    await writeFile(path.join(tmp, 'a/b/f'), 'x');
    await symlink('a/b', path.join(tmp, 'rel'));
    await symlink(path.join(tmp, 'rel'), path.join(tmp, 'abs'));
    const r = resolveObject(path.join(tmp, 'abs/f'));
    expect(r.real).toBe(path.join(tmp, 'a/b/f'));
    expect(r.kind).toBe('file');
    expect(r.links).toEqual([path.join(tmp, 'abs'), path.join(tmp, 'rel')]);
    // What each link said when the walk read it: an error can show where it led.
    expect(r.targets.get(path.join(tmp, 'abs'))).toBe(path.join(tmp, 'rel'));
    expect(r.targets.get(path.join(tmp, 'rel'))).toBe('a/b');
  });

  it('`..` after a symlink leaves the target, as the kernel does', async () => {
    await mkdir(path.join(tmp, 'a/b'), { recursive: true });
    await mkdir(path.join(tmp, 'elsewhere'));
    await symlink(path.join(tmp, 'a/b'), path.join(tmp, 'elsewhere/link'));
    // Spelled by hand: path.join would fold `link/..` away.
    const spelled = `${tmp}/elsewhere/link/..`;
    const r = resolveObject(spelled);
    expect(r.real).toBe(realpathSync.native(spelled));
    expect(r.real).toBe(path.join(tmp, 'a'));
  });

  it('a relative path is taken from the working directory', async () => {
    const d = path.join(tmp, 'rel-d');
    await mkdir(d);
    expect(resolveObject(path.relative(process.cwd(), d)).real).toBe(d);
  });

  it('a dangling link or a missing path names nothing', async () => {
    await symlink(path.join(tmp, 'nowhere'), path.join(tmp, 'dangling'));
    for (const p of [path.join(tmp, 'dangling'), path.join(tmp, 'missing')]) {
      const error = thrownBy(() => resolveObject(p));
      expect(error).toBeInstanceOf(ResolutionError);
      expect((error as ResolutionError).reason).toBe('missing');
    }
  });

  it('names the kernel pseudo file system an object lies on', () => {
    expect(resolveObject('/proc/self').pseudoFileSystem).toBe('proc');
    expect(resolveObject('/sys/kernel').pseudoFileSystem).toBe('sysfs');
    expect(resolveObject(tmp).pseudoFileSystem).toBeUndefined();
  });

  it('records what it read of each entry: the link that led to the object', async () => {
    await mkdir(path.join(tmp, 't'));
    await symlink(path.join(tmp, 't'), path.join(tmp, 'l'));
    const r = resolveObject(path.join(tmp, 'l'));
    expect(r.entries.get(path.join(tmp, 'l'))?.mode).toBe(0o120777);
    expect(r.entries.get(path.join(tmp, 't'))?.mode).toBe(statSync(path.join(tmp, 't')).mode);
  });

  it('a loop of links names nothing', async () => {
    await symlink(path.join(tmp, 'y'), path.join(tmp, 'x'));
    await symlink(path.join(tmp, 'x'), path.join(tmp, 'y'));
    expect((thrownBy(() => resolveObject(path.join(tmp, 'x'))) as ResolutionError).reason).toBe(
      'missing',
    );
  });

  it('under a swap loop, path and identity always describe one object', async () => {
    // `data` flips between a directory and a symlink to a decoy as fast as a process can.
    // Resolving with realpath and then stat-ing the result gave, here, about one answer in
    // six hundred that named `data` with the decoy's identity: a mount checked as one object
    // and held to another's identity.
    const data = path.join(tmp, 'data');
    const decoy = path.join(tmp, 'decoy');
    await mkdir(data);
    await mkdir(decoy);
    const want = { data: identity(data), decoy: identity(decoy) };
    const swapper = spawn('python3', [
      '-c',
      "import os,sys\nd,t=sys.argv[1:3]\nprint('go',flush=True)\nwhile True:\n  os.rename(d,d+'.real'); os.symlink(t,d)\n  os.unlink(d); os.rename(d+'.real',d)",
      data,
      decoy,
    ]);
    await new Promise<void>((resolve, reject) => {
      swapper.stdout.once('data', () => {
        resolve();
      });
      swapper.once('error', reject);
    });
    const seen = { data: 0, decoy: 0, changed: 0, missing: 0, unnamable: 0 };
    const mixed: string[] = [];
    try {
      // The deadline only bounds a starved swapper on a loaded machine (CI ran this beside
      // Docker-heavy suites and, in 3 s, never caught `data` in place); the loop ends as soon
      // as both objects have been seen often enough.
      const until = Date.now() + 30_000;
      while (Date.now() < until && (seen.data < 20 || seen.decoy < 20)) {
        for (let i = 0; i < 200; i += 1) {
          try {
            const r = resolveObject(data);
            const which = r.real === data ? 'data' : r.real === decoy ? 'decoy' : undefined;
            if (which === undefined || r.identity.ino !== want[which].ino) {
              mixed.push(`${r.real} ${r.identity.ino}`);
              continue;
            }
            // Through the link, the link is named: the caller can ask who could replace it.
            expect(r.links).toEqual(which === 'decoy' ? [data] : []);
            seen[which] += 1;
          } catch (error) {
            if (!(error instanceof ResolutionError)) throw error;
            seen[error.reason] += 1;
          }
        }
      }
    } finally {
      swapper.kill('SIGKILL');
    }
    console.log(`resolutions under a swap loop: ${JSON.stringify(seen)}`);
    expect(mixed).toEqual([]);
    // The loop did race the resolution: both objects were seen.
    expect(seen.data, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.decoy, JSON.stringify(seen)).toBeGreaterThan(0);
  }, 45_000);
});

describe('spelledWorkingDirectory', () => {
  it("the shell's PWD when it names the working directory, links kept; else the kernel's name", async () => {
    const real = path.join(tmp, 'real');
    await mkdir(real);
    await symlink(real, path.join(tmp, 'via'));
    const via = path.join(tmp, 'via');
    expect(spelledWorkingDirectory(via, real)).toBe(via);
    // Another directory, a relative or unnormalized spelling, or none: not how cfh got here.
    for (const pwd of [tmp, 'via', `${tmp}/./via`, `${tmp}/x/../via`, undefined]) {
      expect(spelledWorkingDirectory(pwd, real)).toBe(real);
    }
  });
});
