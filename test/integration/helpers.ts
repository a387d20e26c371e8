// Shared helpers for the integration tests: run the built CLI as a child process, and
// look at the real engine to check what exists.
import Docker from 'dockerode';
import { execa } from 'execa';
import { randomUUID } from 'node:crypto';
import { chown, cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll } from 'vitest';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CFH_MAIN = path.join(REPO_ROOT, 'dist', 'cli', 'main.js');
/** The engine the tests talk to: DOCKER_HOST as cfh reads it, else the default socket. */
export function dockerFromEnv(host: string | undefined = process.env.DOCKER_HOST): Docker {
  if (host === undefined || host === '') return new Docker({ socketPath: '/var/run/docker.sock' });
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return new Docker({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375) });
}

export const docker = dockerFromEnv();

export interface CfhResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The cfh process's pid: every engine object it creates carries it (cfh.owner-pid). */
  readonly pid: number;
}

export interface CfhOptions {
  readonly env?: Record<string, string>;
  readonly cwd?: string;
}

/**
 * The state directory of this test file's cfh runs (written-labels records and leases,
 * host-process records): a test reads no state another test file, or the machine, left
 * there. One per file (each evaluates this module afresh), under the suite's own directory,
 * which global-setup.ts makes and removes.
 */
const STATE_ROOT = process.env.CFH_TEST_STATE_ROOT;
const STATE_DIR = STATE_ROOT === undefined ? undefined : path.join(STATE_ROOT, randomUUID());

/** A clean environment: nothing of the developer's leaks into a test by accident. */
export function baseEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    CFH_LOG_LEVEL: 'error',
    ...(STATE_DIR === undefined ? {} : { CFH_STATE_DIR: STATE_DIR }),
    // The child talks to the same engine as the test's own client.
    ...(process.env.DOCKER_HOST === undefined ? {} : { DOCKER_HOST: process.env.DOCKER_HOST }),
    ...extra,
  };
}

const CFH_EXECA = { reject: false, extendEnv: false, stripFinalNewline: false } as const;

export function startCfh(args: readonly string[], options: CfhOptions = {}) {
  return execa(process.execPath, [CFH_MAIN, ...args], {
    ...CFH_EXECA,
    env: baseEnv(options.env),
    cwd: options.cwd ?? REPO_ROOT,
  });
}

export async function cfh(args: readonly string[], options: CfhOptions = {}): Promise<CfhResult> {
  const child = startCfh(args, options);
  const result = await child;
  return {
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
    pid: child.pid ?? -1,
  };
}

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), `cfh-test-${prefix}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** The uid:gid the sandbox runs as when cfh runs as root: the owner of the workspace. */
export const SANDBOX_UID = 4321;

/** As root, gives `file` to the sandbox user, so the sandbox may write or read it. */
export async function ownBySandbox(file: string): Promise<void> {
  if (process.getuid?.() === 0) await chown(file, SANDBOX_UID, SANDBOX_UID);
}

/** A fresh copy of examples/sample-repo at `dir`, owned by the sandbox user. */
export async function copySampleRepo(dir: string): Promise<string> {
  await cp(path.join(REPO_ROOT, 'examples', 'sample-repo'), dir, { recursive: true });
  await ownBySandbox(dir);
  for (const f of await readdir(dir)) await ownBySandbox(path.join(dir, f));
  return dir;
}

export interface AgentRunArgs {
  readonly workspace: string;
  readonly artifactRoot: string;
  readonly profile?: string;
  readonly prompt?: string;
  readonly script?: string;
}

/** `sandbox run [--profile P] --workspace W --artifact-root R --prompt T [--script F] [extra]`. */
export function agentRunArgs(o: AgentRunArgs, extra: readonly string[] = []): string[] {
  return [
    'sandbox',
    'run',
    ...(o.profile === undefined ? [] : ['--profile', o.profile]),
    '--workspace',
    o.workspace,
    '--artifact-root',
    o.artifactRoot,
    '--prompt',
    o.prompt ?? 'p',
    ...(o.script === undefined ? [] : ['--script', o.script]),
    ...extra,
  ];
}

/** A test file's scratch directory: made before its tests, removed after them. */
export interface Scratch {
  /** `name` inside the scratch directory. */
  path(name: string): string;
  /** A fresh copy of examples/sample-repo, owned by the sandbox user. */
  sampleRepo(): Promise<string>;
  /** Writes `body` to `name` inside the scratch directory and returns its path. */
  file(name: string, body: string): Promise<string>;
}

export function useScratch(prefix: string): Scratch {
  let dir: string | undefined;
  let repos = 0;
  beforeAll(async () => {
    dir = await tempDir(prefix);
  });
  afterAll(async () => {
    if (dir !== undefined) await removeDir(dir);
  });
  const at = (name: string): string => {
    if (dir === undefined) throw new Error('scratch used outside a test');
    return path.join(dir, name);
  };
  return {
    path: at,
    sampleRepo: () => {
      repos += 1;
      return copySampleRepo(at(`repo-${repos}`));
    },
    file: async (name, body) => {
      await writeFile(at(name), body);
      return at(name);
    },
  };
}

/** The single run directory under an artifact root a test owns. */
export async function onlyRunDir(artifactRoot: string): Promise<string> {
  const runs = (await readdir(artifactRoot)).filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{8}$/.test(n));
  if (runs.length !== 1)
    throw new Error(`expected one run under ${artifactRoot}, found ${runs.length}`);
  return path.join(artifactRoot, runs[0] ?? '');
}

export async function readJson<T = Record<string, unknown>>(file: string): Promise<T> {
  return JSON.parse(await readFile(file, 'utf8')) as T;
}

export interface Event {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

export async function readEvents(runDir: string): Promise<Event[]> {
  const body = await readFile(path.join(runDir, 'events.jsonl'), 'utf8');
  return body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Event);
}

/** Polls until the run under `artifactRoot` has recorded `type`. */
export async function waitForEvent(
  artifactRoot: string,
  type: string,
  timeoutMs = 60_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const dir = await onlyRunDir(artifactRoot);
      if ((await readEvents(dir)).some((e) => e.type === type)) return dir;
    } catch {
      // not there yet
    }
    if (Date.now() > deadline)
      throw new Error(`no ${type} event under ${artifactRoot} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function containersOfRun(runId: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`cfh.run-id=${runId}`] } });
}

/**
 * Every container, network and volume a cfh process created (cfh labels each with its
 * pid and host), to prove a refused run created nothing. Only the test's own process is
 * looked at: other objects on the engine are none of its business.
 */
export async function objectsOwnedBy(pid: number): Promise<string[]> {
  const filters = { label: [`cfh.owner-pid=${pid}`, `cfh.owner-host=${os.hostname()}`] };
  const [containers, networks, volumes] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
    docker.listVolumes({ filters }),
  ]);
  return [
    ...containers.map((c) => `c:${c.Id}`),
    ...networks.map((n) => `n:${n.Id}`),
    ...((volumes.Volumes as Docker.VolumeInspectInfo[] | null) ?? []).map((v) => `v:${v.Name}`),
  ];
}

export function runIdOf(runDir: string): string {
  return path.basename(runDir);
}

/** What the model was shown of one tool call: the observation inside its fence. */
export interface ToolObservation {
  status: string;
  summary: string;
  items: string[];
  evidence_refs: string[];
  truncated?: { originalChars: number; keptChars: number };
}

export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  is_error: boolean;
  content: string;
  observation: ToolObservation;
}

/** Every tool_result the model was sent (transcript.jsonl), in order, observation parsed. */
export async function toolResults(dir: string): Promise<ToolResultBlock[]> {
  const lines = (await readFile(path.join(dir, 'transcript.jsonl'), 'utf8')).trim().split('\n');
  const out: ToolResultBlock[] = [];
  for (const line of lines) {
    const message = JSON.parse(line) as { role: string; content: Record<string, any>[] };
    for (const block of message.content) {
      if (block.type !== 'tool_result') continue;
      const m =
        /^<untrusted-tool-output tool="[A-Za-z0-9_.-]+">\n([\s\S]*)\n<\/untrusted-tool-output>$/.exec(
          block.content as string,
        );
      if (m === null) throw new Error(`tool_result not wrapped: ${String(block.content)}`);
      out.push({
        ...(block as ToolResultBlock),
        observation: JSON.parse(m[1] ?? '') as ToolObservation,
      });
    }
  }
  return out;
}
