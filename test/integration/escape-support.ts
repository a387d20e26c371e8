// Shared by the seccomp escape batteries (escape-battery.test.ts: the deny list and argument
// rules; escape-setid.test.ts: set-id files): case names per ABI, the unconfined control,
// which ABIs the kernel accepts, and one probe run in a real sandbox.
import { expect } from 'vitest';
import path from 'node:path';
import { cfh, docker, onlyRunDir, readJson } from './helpers.js';
import { parseProbe, type ProbeResult } from './probe.js';

/** The x86 ABIs a 64-bit process can call the kernel through (probe-abi.h). */
export const ABIS = ['x86_64', 'i386', 'x32'] as const;
export type Abi = (typeof ABIS)[number];
export const COMPAT_ABIS = ['i386', 'x32'] as const;

/** The probe's name for case `name` through `abi`: `mount`, `mount@i386`, `mount@x32`. */
export function via(name: string, abi: Abi): string {
  return abi === 'x86_64' ? name : `${name}@${abi}`;
}

export function describeResult(r: ProbeResult | undefined): string {
  if (r === undefined) return 'missing';
  return r.ok ? 'ok' : r.err;
}

/** A probe line for `name`, or a test failure that says which case was missing. */
export function resultOf(results: Map<string, ProbeResult>, name: string): ProbeResult {
  const r = results.get(name);
  if (r === undefined) throw new Error(`the probe printed no line for case '${name}'`);
  return r;
}

/** Not a TTY: the engine frames the log stream (8-byte header: stream, 0, 0, 0, size). */
function demuxStdout(logs: Buffer): string {
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= logs.length;) {
    const size = logs.readUInt32BE(at + 4);
    if (logs[at] === 1) parts.push(logs.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

export const CONTROL_LABEL = 'escape-battery-control';

export interface ControlOptions {
  readonly image: string;
  readonly probeDir: string;
  readonly cases: readonly string[];
  /** Mounted rw at /workspace, the probe's working directory; none: /tmp. */
  readonly workspace?: string;
  readonly user?: string;
  readonly runtime?: 'runc' | 'runsc';
}

/**
 * The control: a sandbox-like container through the engine API (uid of the sandbox, all
 * capabilities dropped, no-new-privileges, no network, read-only root) with the engine's
 * `seccomp=unconfined`: what the kernel (or gVisor) answers with no filter at all.
 */
export async function unconfinedControl(o: ControlOptions): Promise<Map<string, ProbeResult>> {
  const binds = [`${o.probeDir}:/probe:ro`];
  if (o.workspace !== undefined) binds.push(`${o.workspace}:/workspace:rw`);
  const container = await docker.createContainer({
    Image: o.image,
    User: o.user ?? '65534:65534',
    Cmd: ['/probe/probe', ...o.cases],
    WorkingDir: o.workspace === undefined ? '/tmp' : '/workspace',
    Labels: { 'cfh-test': CONTROL_LABEL },
    NetworkDisabled: true,
    HostConfig: {
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges', 'seccomp=unconfined'],
      NetworkMode: 'none',
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': 'rw,size=16m' },
      Init: true,
      Binds: binds,
      ...(o.runtime === 'runsc' ? { Runtime: 'runsc' } : {}),
    },
  });
  try {
    await container.start();
    const exit = (await container.wait()) as { StatusCode: number };
    const logs = await container.logs({ stdout: true, stderr: false, follow: false });
    expect(exit.StatusCode).toBe(0);
    return parseProbe(demuxStdout(logs));
  } finally {
    await container.remove({ force: true });
  }
}

/** Removes controls an interrupted run left behind. */
export async function removeLeftControls(): Promise<void> {
  const left = await docker.listContainers({
    all: true,
    filters: { label: [`cfh-test=${CONTROL_LABEL}`] },
  });
  await Promise.all(left.map((c) => docker.getContainer(c.Id).remove({ force: true })));
}

/**
 * Which ABIs the kernel (or runtime) accepts at all, read from an unconfined control's
 * `getpid` through each: the probe says ok only when the call returned the caller's pid.
 */
export function acceptedAbis(control: Map<string, ProbeResult>): Record<Abi, boolean> {
  return {
    x86_64: resultOf(control, 'getpid').ok,
    i386: resultOf(control, 'getpid@i386').ok,
    x32: resultOf(control, 'getpid@x32').ok,
  };
}

export function describeAbis(control: Map<string, ProbeResult>): string {
  return ABIS.map((abi) => {
    const r = resultOf(control, via('getpid', abi));
    return `${abi}: ${r.ok ? 'accepted' : `not accepted (getpid answers ${r.err})`}`;
  }).join('; ');
}

export interface BatteryRun {
  readonly exitCode: number;
  readonly stderr: string;
  readonly results: Map<string, ProbeResult>;
  readonly runDir: string;
  readonly snapshot: Record<string, any>;
}

/** All `cases` in one sandbox, `cfh sandbox run ARGS -- /probe/probe CASES...`. */
export async function runBattery(o: {
  readonly artifactRoot: string;
  readonly workspace: string;
  readonly probeDir: string;
  readonly args: readonly string[];
  readonly cases: readonly string[];
}): Promise<BatteryRun> {
  const r = await cfh([
    'sandbox',
    'run',
    '--workspace',
    o.workspace,
    '--artifact-root',
    o.artifactRoot,
    '--mount',
    `${o.probeDir}:/probe`,
    ...o.args,
    '--',
    '/probe/probe',
    ...o.cases,
  ]);
  const runDir = await onlyRunDir(o.artifactRoot);
  const snapshot = await readJson<Record<string, any>>(path.join(runDir, 'snapshot.json'));
  return {
    exitCode: r.exitCode,
    stderr: r.stderr,
    results: parseProbe(r.stdout),
    runDir,
    snapshot,
  };
}

/** Whether the engine has runsc registered (the gVisor batteries run only then). */
export async function runscRegistered(): Promise<boolean> {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  return Object.keys(info.Runtimes ?? {}).includes('runsc');
}
