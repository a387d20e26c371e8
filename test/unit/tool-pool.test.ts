// The warm pool's logic against a fake runtime (the engine's part is proved in
// integration/tool-pool.test.ts): the pool bound (never more than pool.size waiting, made
// or being made, however calls and fills interleave), refill as each is taken, each
// container handed out once, a take that re-checks the mount sources (a swap since the fill
// refuses the call), a failed fill that fails the next take, disposal that removes every
// container, in flight or waiting. pool.size is validated with a clear error. No wall time.
import { mkdtemp, rename, rm, mkdir } from 'node:fs/promises';
import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_POOL_SIZE, Profile, ProfileFile } from '../../src/config/profile-schema.js';
import type { ContainerSpec } from '../../src/substrate/container-spec.js';
import type {
  ContainerRuntime,
  CreatedContainer,
  ExecResult,
  StartedContainer,
} from '../../src/substrate/runtime.js';
import { WarmPool, poolSpecDigest, type PoolHooks } from '../../src/tools/tool-pool.js';
import { poolKinds } from '../../src/engine/agent/agent-tool-setup.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-pool-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function specWith(source: string): ContainerSpec {
  const s = statSync(source, { bigint: true });
  return {
    name: 'cfh-20260101T000000Z-0123abcd',
    image: 'img',
    runtime: 'runc',
    engineRuntime: 'runc',
    user: '65534:65534',
    workingDir: '/workspace',
    command: ['true'],
    env: { PATH: '/usr/bin' },
    mounts: [
      {
        source,
        target: '/workspace',
        mode: 'rw',
        identity: { dev: String(s.dev), ino: String(s.ino) },
      },
    ],
    tmpfs: {},
    readOnlyRootfs: true,
    capDrop: ['ALL'],
    capAdd: [],
    noNewPrivileges: true,
    init: true,
    privileged: false,
    networkMode: 'none',
    seccomp: {
      source: 'test',
      sha256: 'x',
      json: '{}',
      grants: {
        allowPtrace: false,
        allowIoUring: false,
        allowUserNamespaces: false,
        allow32BitAbis: false,
        allow: [],
        abis: ['x86_64'],
        socketFamilies: 'all',
      },
    },
    mountCheck: 'gate',
    limits: { memoryBytes: 1, memorySwapBytes: 1, nanoCpus: 1, pidsLimit: 8 },
    labels: {},
  };
}

/** Containers that start when `release()` lets them (or at once), counted while alive. */
class FakeRuntime {
  alive = new Set<string>();
  maxAlive = 0;
  created = 0;
  failNext: Error | undefined;
  readonly #gates: (() => void)[] = [];
  hold = false;

  release(): void {
    for (const g of this.#gates.splice(0)) g();
  }

  runtime(): ContainerRuntime {
    const createContainer = (spec: ContainerSpec): Promise<CreatedContainer> => {
      if (this.failNext !== undefined) {
        const e = this.failNext;
        this.failNext = undefined;
        return Promise.reject(e);
      }
      this.created += 1;
      const id = `id-${this.created}`;
      this.alive.add(id);
      this.maxAlive = Math.max(this.maxAlive, this.alive.size);
      const remove = (): Promise<void> => {
        this.alive.delete(id);
        return Promise.resolve();
      };
      const started: StartedContainer = {
        id,
        name: spec.name,
        wait: () => Promise.reject(new Error('not used')),
        kill: () => Promise.resolve(),
        running: () => Promise.resolve(this.alive.has(id)),
        exec: (): Promise<ExecResult> =>
          Promise.resolve({
            exitCode: 0,
            stdout: Buffer.alloc(0),
            stderr: Buffer.alloc(0),
            stdoutTruncated: false,
            stderrTruncated: false,
          }),
        resize: () => Promise.resolve(),
        remove,
        [Symbol.asyncDispose]: remove,
      };
      const created: CreatedContainer = {
        id,
        name: spec.name,
        attach: () => Promise.reject(new Error('not used')),
        start: () =>
          this.hold
            ? new Promise((resolve) =>
                this.#gates.push(() => {
                  resolve(started);
                }),
              )
            : Promise.resolve(started),
        remove,
        [Symbol.asyncDispose]: remove,
      };
      return Promise.resolve(created);
    };
    return { createContainer } as unknown as ContainerRuntime;
  }
}

/** Hooks that record into arrays the test reads. */
function recording() {
  const made: string[] = [];
  const taken: string[] = [];
  const discarded: string[] = [];
  const hooks: PoolHooks = {
    made: async (c) => {
      made.push(c.id);
      await Promise.resolve();
    },
    taken: async (c) => {
      taken.push(c.id);
      await Promise.resolve();
    },
    discard: async (c) => {
      discarded.push(c.id);
      await c.remove();
    },
  };
  return { hooks, made, taken, discarded };
}

let names = 0;
const suffix = (): string => `-c${(names += 1)}`;
const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

async function workspace(name: string): Promise<string> {
  const ws = path.join(dir, name);
  await mkdir(ws);
  return ws;
}

describe('the warm pool (bounds, refill, once only, fail closed)', () => {
  it('never holds more than pool.size waiting, refills as each is taken, hands each out once', async () => {
    for (const size of [1, 2, MAX_POOL_SIZE]) {
      const fake = new FakeRuntime();
      fake.hold = true;
      const rec = recording();
      const pool = new WarmPool(
        fake.runtime(),
        specWith(await workspace(`bound-${size}`)),
        'workload',
        size,
        rec.hooks,
        suffix,
      );
      pool.fill();
      pool.fill();
      await flush();
      expect(pool.waiting).toBe(size);
      expect(fake.created).toBe(size);
      fake.release();
      const seen = new Set<string>();
      for (let call = 0; call < 3 * size; call++) {
        const c = await pool.take();
        expect(seen.has(c.id)).toBe(false);
        seen.add(c.id);
        // Taken out of the pool, it no longer counts; the pool is full again.
        expect(pool.waiting).toBe(size);
        await flush();
        fake.release();
        await c.remove();
      }
      // Never more alive than the pool plus the one call in hand (one taken while a refill ran).
      expect(fake.maxAlive).toBeLessThanOrEqual(size + 1);
      expect(rec.taken).toEqual([...seen]);
      await pool[Symbol.asyncDispose]();
      fake.release();
      expect(fake.alive.size).toBe(0);
      expect(new Set(rec.made)).toEqual(new Set([...seen, ...rec.discarded]));
    }
  });

  it('disposal waits for fills in flight and removes every container not handed out', async () => {
    const fake = new FakeRuntime();
    fake.hold = true;
    const rec = recording();
    const pool = new WarmPool(
      fake.runtime(),
      specWith(await workspace('dispose')),
      'file-tool',
      2,
      rec.hooks,
      suffix,
    );
    pool.fill();
    await flush();
    const disposed = pool[Symbol.asyncDispose]();
    let done = false;
    void disposed.then(() => {
      done = true;
    });
    await flush();
    expect(done).toBe(false);
    fake.release();
    await disposed;
    expect(fake.alive.size).toBe(0);
    expect(rec.discarded).toHaveLength(2);
    await expect(pool.take()).rejects.toMatchObject({ code: 'tool_executor_closed' });
  });

  it('a source swapped after the fill refuses the call and removes the container', async () => {
    const fake = new FakeRuntime();
    const rec = recording();
    const ws = await workspace('swap');
    const pool = new WarmPool(fake.runtime(), specWith(ws), 'workload', 2, rec.hooks, suffix);
    pool.fill();
    await flush();
    expect(rec.made).toHaveLength(2);
    await rename(ws, `${ws}.moved`);
    await mkdir(ws);
    await expect(pool.take()).rejects.toMatchObject({ code: 'mount_source_changed' });
    expect(rec.taken).toEqual([]);
    expect(rec.discarded).toHaveLength(1);
    await pool[Symbol.asyncDispose]();
    expect(fake.alive.size).toBe(0);
  });

  it('a failed fill stops the filling and fails the next take: no call runs after it', async () => {
    const fake = new FakeRuntime();
    const rec = recording();
    fake.failNext = new Error('engine refused');
    const pool = new WarmPool(
      fake.runtime(),
      specWith(await workspace('fail')),
      'workload',
      2,
      rec.hooks,
      suffix,
    );
    pool.fill();
    await flush();
    await expect(pool.take()).rejects.toThrow('engine refused');
    await expect(pool.take()).rejects.toThrow('engine refused');
    expect(rec.taken).toEqual([]);
    await pool[Symbol.asyncDispose]();
    expect(fake.alive.size).toBe(0);
  });

  it('a container that stopped while it waited is not handed out', async () => {
    const fake = new FakeRuntime();
    const rec = recording();
    const pool = new WarmPool(
      fake.runtime(),
      specWith(await workspace('stopped')),
      'workload',
      1,
      rec.hooks,
      suffix,
    );
    pool.fill();
    await flush();
    fake.alive.clear();
    await expect(pool.take()).rejects.toMatchObject({ code: 'tool_container_lost' });
    expect(rec.taken).toEqual([]);
    await pool[Symbol.asyncDispose]();
  });

  it("a pool's digest is its kind's spec, names aside", async () => {
    const spec = specWith(await workspace('digest'));
    expect(poolSpecDigest(spec, 'workload')).toBe(
      poolSpecDigest({ ...spec, name: 'cfh-other' }, 'workload'),
    );
    expect(poolSpecDigest(spec, 'workload')).not.toBe(poolSpecDigest(spec, 'file-tool'));
    expect(poolSpecDigest(spec, 'workload')).not.toBe(
      poolSpecDigest({ ...spec, image: 'other' }, 'workload'),
    );
  });

  it('pools only the kinds the tools use', () => {
    expect(poolKinds(['read_file', 'grep'])).toEqual(['file-tool']);
    expect(poolKinds(['exec'])).toEqual(['workload']);
    expect(poolKinds(['exec', 'read_file'])).toEqual(['workload', 'file-tool']);
    expect(poolKinds([])).toEqual([]);
  });
});

describe('pool.size in a profile (zod)', () => {
  const base = ProfileFile.parse({});
  it('defaults to 2 and takes 0..8', () => {
    expect(base.pool).toBeUndefined();
    for (const size of [0, 1, MAX_POOL_SIZE])
      expect(ProfileFile.safeParse({ pool: { size } }).success).toBe(true);
    expect(Profile.shape.pool.parse(undefined)).toEqual({ size: 2 });
  });

  it.each([
    [-1, /0 disables the pool/],
    [MAX_POOL_SIZE + 1, /at most 8/],
    [1.5, /whole number/],
    ['2', /whole number/],
  ])('refuses %j with a clear message', (size, message) => {
    const r = Profile.shape.pool.safeParse({ size });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(message);
  });

  it('refuses an unknown key', () => {
    expect(ProfileFile.safeParse({ pool: { sise: 2 } }).success).toBe(false);
  });
});
