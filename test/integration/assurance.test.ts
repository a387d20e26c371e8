// Reduced assurance is explicit (AH-DIAG-2): each way a run is held less tightly than the
// standard sandbox is a reason, with its code, in snapshot.json, report.json and `--json`
// alike; a run with none says `standard`. (runsc without --oci-seccomp: runsc.test.ts.)
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { agentRunArgs, cfh, docker, onlyRunDir, readJson, useScratch } from './helpers.js';
import { MEMORY_SERVER, NODE, profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('assurance');
let n = 0;

async function commandRun(
  profile?: string,
  extra: readonly string[] = [],
): Promise<{ json: any; dir: string }> {
  n += 1;
  const root = scratch.path(`art-${n}`);
  const r = await cfh([
    'sandbox',
    'run',
    ...(profile === undefined ? [] : ['--profile', profile]),
    ...extra,
    '--workspace',
    await scratch.sampleRepo(),
    '--artifact-root',
    root,
    '--json',
    '--',
    'true',
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return { json: JSON.parse(r.stdout), dir: await onlyRunDir(root) };
}

async function recorded(dir: string): Promise<{ snapshot: any; report: any }> {
  return {
    snapshot: (await readJson<Record<string, any>>(path.join(dir, 'snapshot.json'))).assurance,
    report: (await readJson<Record<string, any>>(path.join(dir, 'report.json'))).assurance,
  };
}

describe('reduced assurance: every reason, in snapshot, report and --json', () => {
  it('a run with none of them is standard, with no reasons', async () => {
    const { json, dir } = await commandRun();
    const { snapshot, report } = await recorded(dir);
    expect(snapshot).toEqual({
      level: 'standard',
      notes: [],
      reasons: [],
      basis: [{ code: 'container', detail: expect.stringMatching(/^runc: /) }],
    });
    expect(report).toEqual(snapshot);
    expect(json.assurance).toEqual(snapshot);
  });

  it('a runsc run is strong, resting on the gVisor binary the engine registered', async (ctx) => {
    const info = (await docker.info()) as {
      Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
    };
    const runsc = info.Runtimes?.runsc;
    if (runsc === undefined) ctx.skip('runsc not registered with the engine');
    const { json, dir } = await commandRun(undefined, ['--runtime', 'runsc']);
    const { snapshot, report } = await recorded(dir);
    const oci = (runsc?.runtimeArgs ?? []).includes('--oci-seccomp');
    // Without --oci-seccomp the profile's filter is not applied: reduced, however strong gVisor is.
    expect(snapshot.level).toBe(oci ? 'strong' : 'reduced');
    if (oci)
      expect(snapshot.basis).toEqual([
        { code: 'gvisor', detail: expect.stringContaining(`runsc: ${String(runsc?.path)}`) },
      ]);
    expect(report).toEqual(snapshot);
    expect(json.assurance).toEqual(snapshot);
    const audit = await cfh(['audit', '--json', dir]);
    const checks = (JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] })
      .checks;
    const check = checks.find((c) => c.id === 'assurance.recorded');
    expect(check?.verdict).toBe(oci ? 'pass' : 'warn');
    // `runs show` says the level and what it rests on.
    const show = await cfh(['runs', 'show', '--artifact-root', path.dirname(dir), json.runId]);
    expect(show.stdout).toMatch(oci ? /assurance\s+strong: gVisor/ : /assurance\s+reduced/);
  });

  it('a profile that widens the seccomp filter is reduced, naming each grant', async () => {
    const profile = await profileFile(scratch, 'widened', {
      seccomp: { allowPtrace: true, allow: ['kcmp'] },
    });
    const { json, dir } = await commandRun(profile);
    const { snapshot, report } = await recorded(dir);
    expect(snapshot.level).toBe('reduced');
    expect(snapshot.reasons).toEqual([
      {
        code: 'seccomp-widened',
        detail: expect.stringMatching(/allowPtrace; allow: kcmp/),
      },
    ]);
    expect(report).toEqual(snapshot);
    expect(json.assurance).toEqual(snapshot);
    // The audit warns, and finds snapshot and report alike.
    const audit = await cfh(['audit', '--json', dir]);
    expect(audit.stdout).toContain('reduced assurance, stated in snapshot and report');
  });

  it('an agent run with host tools is reduced: they run outside the sandbox', async () => {
    const profile = await profileFile(scratch, 'host', {
      hostTools: [
        {
          name: 'memory',
          kind: 'mcp',
          command: NODE,
          args: [MEMORY_SERVER],
          env: { MEMORY_FILE_PATH: { value: scratch.path('graph.jsonl') } },
          tools: [{ name: 'read_graph', riskClass: 'read_only', sideEffectClass: 'none' }],
        },
      ],
    });
    const script = await scriptFile(scratch, 'host', []);
    const root = scratch.path('art-host');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const { snapshot, report } = await recorded(await onlyRunDir(root));
    expect(snapshot).toMatchObject({
      level: 'reduced',
      reasons: [{ code: 'host-tools', detail: expect.stringContaining('memory') }],
    });
    expect(report).toEqual(snapshot);
  });
});
