// The operator commands: capabilities without an engine (AH-CAP-1/2), doctor (AH-CAP-4),
// profiles show --resolved printing the exact engine request.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { REPO_ROOT, baseEnv, cfh, useScratch } from './helpers.js';
import { refusal } from './refusal.js';

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
    // AH-CAP-2: native model tools and the optional protocol features, each said.
    expect(caps.nativeModelTools).toEqual([]);
    expect(caps.protocolFeatures).toEqual({
      json: true,
      streaming: true,
      cancellation: ['SIGINT', 'SIGTERM', 'SIGHUP'],
      interactiveSessions: true,
      // `cfh mcp` (integration/mcp.test.ts): what it serves, approvals from the operator only.
      mcpServer: expect.objectContaining({ transport: 'stdio' }) as unknown,
      delegation: expect.objectContaining({ tool: 'delegate', profileKey: 'children' }) as unknown,
      resume: true,
      compaction: true,
    });
    expect(caps.sandbox.networkModes.supported).toEqual(['disabled', 'allowlist', 'open']);
    // Class 9: the paths a host tool obeys, read-only in rw mounts unless named writable.
    expect(caps.sandbox.hostObeyed).toMatchObject({ modes: ['ro', 'rw'], default: 'ro' });
    expect(caps.sandbox.hostObeyed.names).toEqual(expect.arrayContaining(['.git', '.envrc']));
    expect(caps.profiles).toEqual(expect.arrayContaining(['default', 'untrusted-repo']));
    expect(caps.agentRun.toolContainerLifetimes).toEqual(['per-run', 'per-call']);
    expect(caps.agentRun.toolContainerPool).toMatchObject({
      lifetime: 'per-call',
      profileKey: 'pool.size',
      default: 2,
      max: 8,
      auditCheck: 'lifecycle.pool',
    });
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
      '--label',
    ]);
    // AH-CFC-14: the CFC modes and where labels come from, before any run.
    expect(caps.cfc.modes.supported).toEqual([
      'disabled',
      'observe',
      'enforce-explicit',
      'enforce-strict',
    ]);
    expect(caps.exitCodes).toMatchObject({ cannotStart: 125, failedAfterStart: 1 });
    // The mediator is advertised with its vocabulary (AH-CAP-2).
    expect(caps.mediator.decisions).toHaveLength(7);
    expect(caps.mediator.riskClasses).toHaveLength(15);
    expect(caps.mediator.policy).toMatchObject({
      defaultDecision: 'deny',
      explain: 'cfh policy explain',
    });
    expect(caps.agentRun.approvals.surfaces).toEqual(['flag', 'file', 'tty']);
    expect(caps.agentRun.planningMode.flags).toEqual(['--plan', '--from-plan']);
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

  it('doctor warns, and does not fail, when the configured model is retired or deprecated', async () => {
    type Check = { name: string; ok: boolean; required: boolean; detail: string };
    const modelOf = (stdout: string): Check | undefined =>
      (JSON.parse(stdout) as { checks: Check[] }).checks.find((c) => c.name === 'model');
    // claude-sonnet-4-5, the old default: end of life 2026-11-30 in the SDK's own table.
    const retired = await cfh(['doctor', '--json'], { env: { CFH_MODEL: 'claude-sonnet-4-5' } });
    expect(retired.exitCode).toBe(0);
    expect(JSON.parse(retired.stdout)).toMatchObject({ healthy: true });
    expect(modelOf(retired.stdout)).toMatchObject({ ok: false, required: false });
    expect(modelOf(retired.stdout)?.detail).toMatch(
      /claude-sonnet-4-5 (reached end of life on|is deprecated, end of life) 2026-11-30 \(@anthropic-ai\/sdk /,
    );
    const text = await cfh(['doctor'], { env: { CFH_MODEL: 'claude-sonnet-4-5' } });
    expect(text.stdout).toMatch(/^warn model +claude-sonnet-4-5 /m);
    expect(text.stdout).toMatch(/^healthy$/m);
    // The default: current. Checked without an engine, too.
    const current = await cfh(['doctor', '--json'], {
      env: { DOCKER_HOST: 'unix:///nonexistent.sock' },
    });
    expect(modelOf(current.stdout)).toMatchObject({ ok: true, required: false });
    expect(modelOf(current.stdout)?.detail).toMatch(/^claude-sonnet-5-5: not deprecated/);
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
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stdout).toBe('');
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

describe('profiles show --seccomp-out', () => {
  const scratch = useScratch('seccomp-out');

  it('refuses a FIFO at once instead of blocking in open, and writes a regular file', async () => {
    const fifo = scratch.path('filter.fifo');
    execFileSync('mkfifo', [fifo]);
    const r = await refusal(
      ['profiles', 'show', 'default', '--workspace', REPO_ROOT, '--seccomp-out', fifo],
      scratch.path('no-artifacts'),
    );
    // profiles show has no --json: one line on stderr, a usage error (2).
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^cfh: --seccomp-out: [^\n]+\n$/);
    const file = scratch.path('filter.json');
    const ok = await cfh([
      'profiles',
      'show',
      'default',
      '--workspace',
      REPO_ROOT,
      '--seccomp-out',
      file,
    ]);
    expect(ok.exitCode, ok.stderr).toBe(0);
    const sha = (JSON.parse(ok.stdout) as { seccomp: { sha256: string } }).seccomp.sha256;
    expect(
      createHash('sha256')
        .update(await readFile(file))
        .digest('hex'),
    ).toBe(sha);
  });
});

describe('bin/cfh through symbolic links', () => {
  const scratch = useScratch('bin-link');

  it('finds dist/ beside the real script, not beside the link (npm link, PATH, chained links)', async () => {
    const real = path.join(REPO_ROOT, 'bin', 'cfh');
    await mkdir(scratch.path('global/bin'), { recursive: true });
    await mkdir(scratch.path('elsewhere'), { recursive: true });
    // An absolute link, as `npm link` makes; a relative link to that link, as a PATH
    // directory might hold; a link to the bin directory itself.
    await symlink(real, scratch.path('global/bin/cfh'));
    await symlink('../global/bin/cfh', scratch.path('elsewhere/cfh-chained'));
    await symlink(path.join(REPO_ROOT, 'bin'), scratch.path('bin-dir'));
    const runs: [string, string[], Record<string, string>][] = [
      [scratch.path('global/bin/cfh'), ['--version'], {}],
      [scratch.path('elsewhere/cfh-chained'), ['--version'], {}],
      [path.join(scratch.path('bin-dir'), 'cfh'), ['--version'], {}],
      // Found on PATH, started by name from an unrelated directory.
      ['cfh-chained', ['--version'], { PATH: `${scratch.path('elsewhere')}:${baseEnv().PATH}` }],
    ];
    for (const [command, args, env] of runs) {
      const r = await execa(command, args, {
        reject: false,
        extendEnv: false,
        env: baseEnv(env),
        cwd: scratch.path('elsewhere'),
      });
      expect(r.stderr, command).not.toContain('Cannot find module');
      expect(r.exitCode, `${command}: ${r.stderr}`).toBe(0);
      expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });
});
