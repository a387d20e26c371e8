// The operator commands: capabilities without an engine (AH-CAP-1/2), doctor (AH-CAP-4),
// profiles show --resolved printing the exact engine request.
import { describe, expect, it } from 'vitest';
import { cfh } from './helpers.js';

describe('operator commands', () => {
  it('capabilities --json needs no engine', async () => {
    const r = await cfh(['capabilities', '--json'], {
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(r.exitCode).toBe(0);
    const caps = JSON.parse(r.stdout) as Record<string, any>;
    expect(caps.schema).toBe('cfh.capabilities/1');
    expect((caps.parentTools as { name: string }[]).map((t) => t.name)).toEqual([
      'exec',
      'read_file',
      'write_file',
      'edit_file',
      'list_dir',
      'grep',
    ]);
    expect(caps.hostTools).toEqual([]);
    expect(caps.childProfiles).toEqual([]);
    expect(caps.sandbox.networkModes.supported).toEqual(['disabled', 'allowlist', 'open']);
    expect(caps.profiles).toEqual(expect.arrayContaining(['default', 'untrusted-repo']));
    expect(caps.agentRun.toolContainerLifetimes).toEqual(['per-run', 'per-call']);
    expect(caps.agentRun.costEstimates).toBe(true);
    expect(caps.agentRun.rateCard).toBe('rate-cards/anthropic.json');
    expect(caps.agentRun.budgets).toHaveLength(10);
    expect(caps.agentRun.budgets).toContainEqual({
      budget: 'maxTotalCost',
      flag: '--max-total-cost',
    });
    expect(caps.repeatableFields['sandbox run']).toEqual([
      '--mount',
      '--allow',
      '--deny',
      '--context',
      '--quote',
      '--approve',
    ]);
    expect(caps.agentRun.approvals.surfaces).toEqual(['flag', 'file', 'tty']);
    expect(caps.agentRun.planningMode.flags).toEqual(['--plan', '--from-plan']);
    expect(caps.exitCodes).toMatchObject({ cannotStart: 125, agentRunFailed: 1 });
  });

  it('doctor reports a healthy engine, and fails when the engine is unreachable', async () => {
    const ok = await cfh(['doctor', '--json']);
    expect(ok.exitCode).toBe(0);
    const report = JSON.parse(ok.stdout) as {
      healthy: boolean;
      checks: { name: string; ok: boolean }[];
    };
    expect(report.healthy).toBe(true);
    expect(report.checks.map((c) => c.name)).toEqual(
      expect.arrayContaining([
        'engine',
        'runtime:runc',
        'runtime:runsc',
        'image:sandbox',
        'limit:memory',
        'limit:pids',
      ]),
    );
    const down = await cfh(['doctor', '--json'], {
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(down.exitCode).not.toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({ healthy: false });
  });

  it('profiles list and profiles show --resolved print the derived engine request', async () => {
    const list = await cfh(['profiles', 'list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'untrusted-repo', workspace: 'rw' }),
      ]),
    );
    const show = await cfh(['profiles', 'show', 'untrusted-repo', '--resolved']);
    expect(show.exitCode).toBe(0);
    const resolved = JSON.parse(show.stdout) as Record<string, any>;
    expect(resolved.profile.limits.pids).toBe(128);
    expect(resolved.engineRequest.HostConfig).toMatchObject({
      CapDrop: ['ALL'],
      ReadonlyRootfs: true,
      Init: true,
      Privileged: false,
      NetworkMode: 'none',
      PidsLimit: 128,
      Memory: 512 * 1024 * 1024,
    });
    expect(resolved.engineRequest.HostConfig.SecurityOpt[1]).toMatch(
      /^seccomp=<sha256:[0-9a-f]{64}>$/,
    );
    const unknown = await cfh(['profiles', 'show', 'nope']);
    expect(unknown.exitCode).toBe(125);
  });

  it('--version and --help answer everywhere', async () => {
    expect((await cfh(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    for (const args of [
      ['--help'],
      ['sandbox', 'run', '--help'],
      ['reap', '--help'],
      ['runs', 'show', '--help'],
    ]) {
      const r = await cfh(args);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/^Usage: cfh/);
    }
  });
});
