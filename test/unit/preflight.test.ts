// AH-CAP-4: a run that needs a dependency the engine lacks is refused before anything is
// created. A fake runtime stands in for the engine here (pure logic); the real engine path
// is in integration/runsc.test.ts and integration/validation.test.ts.
import { describe, expect, it } from 'vitest';
import { preflight } from '../../src/engine/run/preflight.js';
import { ConfigError, ImageNotFoundError } from '../../src/errors.js';
import type { ContainerRuntime, EngineFacts } from '../../src/substrate/runtime.js';
import type { ContainerSpec } from '../../src/substrate/container-spec.js';

function fakeRuntime(runtimes: Record<string, string[]>, imagePresent = true) {
  const calls: string[] = [];
  const facts: EngineFacts = {
    serverVersion: '20.10.24',
    apiVersion: '1.41',
    runtimes: Object.keys(runtimes),
    runtimeArgs: runtimes,
    runtimePaths: Object.fromEntries(Object.keys(runtimes).map((r) => [r, `/usr/bin/${r}`])),
    defaultRuntime: 'runc',
    memoryLimit: true,
    pidsLimit: true,
    cpuCfsQuota: true,
    securityOptions: ['name=seccomp'],
    cgroupVersion: '1',
  };
  const unexpected = (name: string) => () => {
    calls.push(name);
    return Promise.reject(new Error(`preflight must not call ${name}`));
  };
  const runtime = {
    ping: () => Promise.resolve(),
    facts: () => {
      calls.push('facts');
      return Promise.resolve(facts);
    },
    version: () => Promise.resolve({ serverVersion: '20.10.24', apiVersion: '1.41' }),
    inspectImage: () =>
      Promise.resolve(
        imagePresent
          ? {
              id: 'sha256:abc',
              tags: [],
              createdAt: '',
              sizeBytes: 1,
              labels: {},
              config: { volumes: [], entrypoint: [], healthcheck: [], onBuild: [] },
            }
          : undefined,
      ),
    createContainer: unexpected('createContainer'),
    listLabelled: unexpected('listLabelled'),
    removeObject: unexpected('removeObject'),
    freezeLabelled: unexpected('freezeLabelled'),
    importImage: unexpected('importImage'),
    pullImage: unexpected('pullImage'),
    buildImage: unexpected('buildImage'),
  } as unknown as ContainerRuntime;
  return { runtime, calls };
}

const spec = (runtime: 'runc' | 'runsc') =>
  ({ runtime, engineRuntime: runtime, image: 'cfh-sandbox:x' }) as unknown as ContainerSpec;

describe('preflight', () => {
  it('refuses runsc when the engine does not have it, creating nothing', async () => {
    const { runtime, calls } = fakeRuntime({ runc: [] });
    await expect(preflight(runtime, spec('runsc'))).rejects.toThrow(ConfigError);
    await expect(preflight(runtime, spec('runsc'))).rejects.toThrow(
      /runtime: 'runsc' is not registered/,
    );
    expect(calls.filter((c) => c !== 'facts')).toEqual([]);
  });

  it('records gVisor enforcement from the registered runtime arguments', async () => {
    const withFlag = fakeRuntime({ runc: [], runsc: ['--network=none', '--oci-seccomp'] });
    expect((await preflight(withFlag.runtime, spec('runsc'))).seccompEnforcement).toBe(
      'gvisor-oci-seccomp',
    );
    const without = fakeRuntime({ runc: [], runsc: ['--network=none'] });
    expect((await preflight(without.runtime, spec('runsc'))).seccompEnforcement).toBe(
      'not-applied-gvisor',
    );
  });

  it('does not ask for engine info under runc (the slow call), and needs the image', async () => {
    const { runtime, calls } = fakeRuntime({ runc: [] });
    expect((await preflight(runtime, spec('runc'))).seccompEnforcement).toBe('kernel-seccomp');
    expect(calls).toEqual([]);
    const missing = fakeRuntime({ runc: [] }, false);
    await expect(preflight(missing.runtime, spec('runc'))).rejects.toThrow(ImageNotFoundError);
  });
});
