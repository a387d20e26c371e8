import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadProfile } from '../../src/config/profile-loader.js';
import type { Profile } from '../../src/config/profile-schema.js';
import {
  BASE_ENV,
  LOOPBACK_HOSTS,
  deriveContainerSpec,
  type SpecInputs,
} from '../../src/sandbox/derive-spec.js';
import { describeSpec, type ContainerSpec } from '../../src/substrate/container-spec.js';
import { toCreateOptions } from '../../src/substrate/docker/adapter.js';
import { expectConfigError, must } from './helpers.js';

const CANARY = 'CFH_UNIT_TEST_CANARY';
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function defaultProfile(): Profile {
  return loadProfile('default').profile;
}

function inputs(profile: Profile = defaultProfile()): SpecInputs {
  return {
    profile,
    imageRef: 'cfh-sandbox:r-test',
    user: '1000:1000',
    mounts: [
      { source: '/srv/ws', target: '/workspace', mode: 'ro' },
      { source: '/srv/data', target: '/data', mode: 'rw' },
    ],
    command: ['python3', '-c', 'print(1)'],
    containerName: 'cfh-20240101T000000Z-0123abcd',
    labels: { 'cfh.run-id': '20240101T000000Z-0123abcd' },
  };
}

beforeEach(() => {
  process.env[CANARY] = 'host-secret';
});

afterEach(() => {
  // eslint-disable-next-line @typescript-eslint/no-dynamic-delete
  delete process.env[CANARY];
});

describe('deriveContainerSpec (default profile)', () => {
  it('hardens the container', () => {
    const spec = deriveContainerSpec(inputs());
    expect(spec.capDrop).toEqual(['ALL']);
    expect(spec.capAdd).toEqual([]);
    expect(spec.readOnlyRootfs).toBe(true);
    expect(spec.init).toBe(true);
    expect(spec.noNewPrivileges).toBe(true);
    expect(spec.networkMode).toBe('none');
    expect(spec.privileged).toBe(false);
  });

  it('carries the request through', () => {
    const i = inputs();
    const spec = deriveContainerSpec(i);
    expect(spec.name).toBe(i.containerName);
    expect(spec.image).toBe('cfh-sandbox:r-test');
    expect(spec.user).toBe('1000:1000');
    expect(spec.workingDir).toBe('/workspace');
    expect(spec.command).toEqual(['python3', '-c', 'print(1)']);
    expect(spec.mounts).toEqual(i.mounts);
    expect(spec.labels).toEqual(i.labels);
    expect(spec.runtime).toBe('runc');
    expect(spec.engineRuntime).toBe('runc');
  });

  it('sets hard limits from the profile: no swap, nano-CPUs, pids', () => {
    const spec = deriveContainerSpec(inputs());
    expect(spec.limits.memoryBytes).toBe(1 * GiB);
    expect(spec.limits.memorySwapBytes).toBe(spec.limits.memoryBytes);
    expect(spec.limits.nanoCpus).toBe(1e9);
    expect(spec.limits.pidsLimit).toBe(256);
  });

  it('converts fractional CPUs to nano-CPUs', () => {
    const base = defaultProfile();
    const half = deriveContainerSpec(inputs({ ...base, limits: { ...base.limits, cpus: 0.5 } }));
    expect(half.limits.nanoCpus).toBe(500_000_000);
    const more = deriveContainerSpec(inputs({ ...base, limits: { ...base.limits, cpus: 1.5 } }));
    expect(more.limits.nanoCpus).toBe(1_500_000_000);
    expect(Number.isInteger(more.limits.nanoCpus)).toBe(true);
  });

  it('mounts a size-limited nosuid tmpfs at /tmp only', () => {
    const spec = deriveContainerSpec(inputs());
    expect(Object.keys(spec.tmpfs)).toEqual(['/tmp']);
    expect(spec.tmpfs['/tmp']).toBe(`rw,nosuid,nodev,size=${64 * MiB},mode=1777`);
  });

  it('passes only the base environment, never the host environment', () => {
    expect(process.env[CANARY]).toBe('host-secret');
    const spec = deriveContainerSpec(inputs());
    expect(spec.env).toEqual(BASE_ENV);
    expect(spec.env).not.toHaveProperty(CANARY);
    expect(Object.values(spec.env)).not.toContain('host-secret');
  });

  it('adds profile env on top of the base, which it may override', () => {
    const base = defaultProfile();
    const spec = deriveContainerSpec(inputs({ ...base, env: { FOO: 'bar', LANG: 'en_US.UTF-8' } }));
    expect(spec.env).toEqual({ ...BASE_ENV, FOO: 'bar', LANG: 'en_US.UTF-8' });
    expect(spec.env).not.toHaveProperty(CANARY);
  });

  it('derives a default-deny seccomp filter with a stable sha256 of its JSON', () => {
    const a = deriveContainerSpec(inputs());
    const b = deriveContainerSpec(inputs());
    expect(a.seccomp.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(a.seccomp.sha256).toBe(b.seccomp.sha256);
    expect(a.seccomp.sha256).toBe(createHash('sha256').update(a.seccomp.json).digest('hex'));
    expect(a.seccomp.source).toBe('derived:cfh.seccomp-base/2');
    const filter = JSON.parse(a.seccomp.json) as { defaultAction: string; syscalls: unknown[] };
    expect(filter.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(filter.syscalls.length).toBeGreaterThan(0);
  });

  it('is deterministic: the same inputs give the same spec', () => {
    expect(deriveContainerSpec(inputs())).toEqual(deriveContainerSpec(inputs()));
  });

  it('lets clone3 through to gVisor under runsc (it answers ENOSYS itself), nothing else differs', () => {
    const base = defaultProfile();
    const runc = deriveContainerSpec(inputs());
    const spec = deriveContainerSpec(inputs({ ...base, runtime: 'runsc' }));
    expect(spec.runtime).toBe('runsc');
    expect(spec.engineRuntime).toBe('runsc');
    expect(spec.seccomp.sha256).not.toBe(runc.seccomp.sha256);
    type Rule = { names: string[]; action: string };
    const allowed = (json: string) =>
      new Set(
        (JSON.parse(json) as { syscalls: Rule[] }).syscalls
          .filter((r) => r.action === 'SCMP_ACT_ALLOW')
          .flatMap((r) => r.names),
      );
    const extra = [...allowed(spec.seccomp.json)].filter((n) => !allowed(runc.seccomp.json).has(n));
    expect(extra).toEqual(['clone3']);
  });

  it('refuses a profile whose memory is not a size, naming limits.memory', () => {
    const base = defaultProfile();
    expectConfigError(
      () => deriveContainerSpec(inputs({ ...base, limits: { ...base.limits, memory: 'lots' } })),
      'invalid_size',
      'limits.memory',
    );
  });
});

describe('describeSpec', () => {
  it('shows env names but not values, and the filter digest but not its body', () => {
    const base = defaultProfile();
    const spec = deriveContainerSpec(inputs({ ...base, env: { TOKEN: 'value-not-shown' } }));
    const described = describeSpec(spec);
    expect(described).not.toHaveProperty('env');
    expect(described.envNames).toEqual(['HOME', 'LANG', 'PATH', 'TOKEN']);
    expect(described.seccomp).toEqual({
      source: spec.seccomp.source,
      sha256: spec.seccomp.sha256,
      grants: spec.seccomp.grants,
    });
    expect(JSON.stringify(described)).not.toContain('value-not-shown');
    expect(JSON.stringify(described)).not.toContain('SCMP_ACT_ERRNO');
  });
});

describe('toCreateOptions', () => {
  function create(spec: ContainerSpec = deriveContainerSpec(inputs())) {
    const options = toCreateOptions(spec);
    return { spec, options, host: must(options.HostConfig, 'HostConfig') };
  }

  it('drops every capability and adds none', () => {
    const { host } = create();
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd).toEqual([]);
  });

  it('sets no-new-privileges and passes the seccomp filter inline', () => {
    const { host, spec } = create();
    // dockerode types SecurityOpt as any; check its shape before using it.
    const raw: unknown = host.SecurityOpt;
    expect(Array.isArray(raw)).toBe(true);
    const securityOpt = (raw as unknown[]).map((o) => {
      expect(typeof o).toBe('string');
      return String(o);
    });
    expect(securityOpt).toContain('no-new-privileges:true');
    const seccomp = securityOpt.filter((o) => o.startsWith('seccomp='));
    expect(seccomp).toHaveLength(1);
    const body = must(seccomp[0]).slice('seccomp='.length);
    expect(body).toBe(spec.seccomp.json);
    const filter = JSON.parse(body) as { defaultAction: string };
    expect(filter.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect(securityOpt.some((o) => o.includes('unconfined'))).toBe(false);
  });

  it('is unprivileged, network-less, publishes nothing, read-only root, private IPC', () => {
    const { host, options } = create();
    expect(host.Privileged).toBe(false);
    expect(host.NetworkMode).toBe('none');
    expect(options.NetworkDisabled).toBe(true);
    expect(host.PortBindings).toEqual({});
    expect(host.PublishAllPorts).toBe(false);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.IpcMode).toBe('private');
    expect(host.Init).toBe(true);
  });

  it('bind-mounts each spec mount, read-only exactly when its mode is ro', () => {
    const { host } = create();
    expect(host.Mounts).toEqual([
      expect.objectContaining({
        Type: 'bind',
        Source: '/srv/ws',
        Target: '/workspace',
        ReadOnly: true,
      }),
      expect.objectContaining({
        Type: 'bind',
        Source: '/srv/data',
        Target: '/data',
        ReadOnly: false,
      }),
    ]);
  });

  it('runs as the spec user in the workspace; under runc the gate hands the command its env', () => {
    const { options, spec } = create();
    expect(spec.mountCheck).toBe('gate');
    expect(options.User).toBe('1000:1000');
    expect(options.WorkingDir).toBe('/workspace');
    // The gate (mount-gate.ts): the image's env only for the gate itself, the spec's env
    // handed to the command by `env -i`, the command last; stdin for cfh's word.
    expect(options.Env).toEqual([]);
    expect(options.OpenStdin).toBe(true);
    expect(options.StdinOnce).toBe(true);
    const cmd = must(options.Cmd);
    expect(cmd.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(cmd[2]).toContain('exec env -i "$@"');
    expect(cmd.slice(-3)).toEqual(['python3', '-c', 'print(1)']);
    const envArgs = cmd.filter((a) => /^[A-Z_]+=/.test(a)).sort();
    expect(envArgs).toEqual(
      Object.entries(BASE_ENV)
        .map(([k, v]) => `${k}=${v}`)
        .sort(),
    );
    expect(cmd.some((e) => e.startsWith(`${CANARY}=`))).toBe(false);
  });

  it('under runsc (no gate) the command and env go to the engine as they are', () => {
    const { options, spec } = create(
      deriveContainerSpec(inputs({ ...defaultProfile(), runtime: 'runsc' })),
    );
    expect(spec.mountCheck).toBe('recheck');
    expect(options.Cmd).toEqual(['python3', '-c', 'print(1)']);
    expect(options.OpenStdin).toBe(false);
    expect([...must(options.Env)].sort()).toEqual(
      Object.entries(BASE_ENV)
        .map(([k, v]) => `${k}=${v}`)
        .sort(),
    );
  });

  it('maps limits, tmpfs, runtime and labels', () => {
    const { host, options, spec } = create();
    expect(host.Memory).toBe(GiB);
    expect(host.MemorySwap).toBe(GiB);
    expect(host.NanoCpus).toBe(1e9);
    expect(host.PidsLimit).toBe(256);
    expect(host.Tmpfs).toEqual(spec.tmpfs);
    expect(host.Runtime).toBe('runc');
    expect(options.Labels).toEqual(spec.labels);
    expect(options.Image).toBe('cfh-sandbox:r-test');
    expect(options.name).toBe(spec.name);
  });

  it('keeps no engine log and never restarts or auto-removes', () => {
    const { host } = create();
    expect(host.LogConfig).toEqual({ Type: 'none', Config: {} });
    expect(host.RestartPolicy).toEqual({ Name: 'no' });
    expect(host.AutoRemove).toBe(false);
  });

  it('passes runsc as the engine runtime', () => {
    const base = defaultProfile();
    const { host } = create(deriveContainerSpec(inputs({ ...base, runtime: 'runsc' })));
    expect(host.Runtime).toBe('runsc');
  });
});

// The class: under `disabled` the engine leaves /etc/hosts empty, so `localhost` does not
// resolve and a localhost-server test fails on the name (integration/escape-loopback.test.ts
// "h11 style"); cfh mounts its own, read-only. With egress the guard's names it already.
describe('deriveContainerSpec: /etc/hosts without a network', () => {
  it('mounts the hosts file read-only under disabled, naming localhost for IPv4 and IPv6', () => {
    const spec = deriveContainerSpec({ ...inputs(), hosts: '/runs/r/hosts' });
    expect(spec.mounts.at(-1)).toEqual({
      source: '/runs/r/hosts',
      target: '/etc/hosts',
      mode: 'ro',
    });
    expect(LOOPBACK_HOSTS.split('\n')).toEqual([
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost ip6-localhost ip6-loopback',
      '',
    ]);
  });

  it('leaves /etc/hosts to the guard when the workload joins its namespace', () => {
    const spec = deriveContainerSpec({
      ...inputs(),
      hosts: '/runs/r/hosts',
      egress: { guard: 'g', resolvConf: '/cfg/resolv.conf' },
    });
    expect(spec.mounts.map((m) => m.target)).not.toContain('/etc/hosts');
    expect(spec.mounts.map((m) => m.target)).toContain('/etc/resolv.conf');
  });
});
