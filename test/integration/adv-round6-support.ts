// Shared helpers of the round-6 red team's tests (written independently of earlier rounds'):
// a scratch directory with its own state and key directories, profiles and scripts as YAML,
// and readers of a run's snapshot and transcript.
import { execa } from 'execa';
import { chmod, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { cfh, ownBySandbox, type CfhResult, type Scratch } from './helpers.js';

let counter = 0;

/** A fresh directory inside the scratch, owned by the sandbox user. */
export async function dirIn(scratch: Scratch, name: string): Promise<string> {
  const d = await plainDir(scratch, name);
  await ownBySandbox(d);
  // The sandbox user walks to it (a draft is copied as that user).
  await chmod(path.dirname(d), 0o755);
  await chmod(d, 0o755);
  return d;
}

/** A fresh directory inside the scratch, cfh's own (artifact roots, state, keys). */
export async function plainDir(scratch: Scratch, name: string): Promise<string> {
  counter += 1;
  const d = scratch.path(`${name}-${counter}`);
  await mkdir(d, { recursive: true, mode: 0o700 });
  return d;
}

/** A state and key directory of one scenario (records and leases are its own). */
export async function stateEnv(scratch: Scratch, name: string): Promise<Record<string, string>> {
  const state = await plainDir(scratch, `state-${name}`);
  const keys = await plainDir(scratch, `keys-${name}`);
  return { CFH_STATE_DIR: state, CFH_KEY_DIR: keys };
}

export async function yamlFile(scratch: Scratch, name: string, body: unknown): Promise<string> {
  counter += 1;
  const f = scratch.path(`${name}-${counter}.yaml`);
  await writeFile(f, stringify(body));
  return f;
}

/** A scripted model of `turns` (each a list of tool calls), and a final answer. */
export async function script(
  scratch: Scratch,
  turns: readonly (readonly { name: string; input: Record<string, unknown> }[])[],
  extra: Record<string, unknown> = {},
): Promise<string> {
  return yamlFile(scratch, 'script', {
    model: 'scripted-adv6',
    turns: [...turns.map((calls) => ({ text: 'step', tool_calls: calls })), { text: 'done' }],
    ...extra,
  });
}

export async function runDirs(artifactRoot: string): Promise<string[]> {
  try {
    return (await readdir(artifactRoot))
      .filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{8}$/.test(n))
      .sort()
      .map((n) => path.join(artifactRoot, n));
  } catch {
    return [];
  }
}

export interface Snapshot {
  cfc: {
    mounts: {
      target: string;
      label?: { confidentiality: string[]; integrity: string[] };
      labelSource?: string;
      writtenBy?: string[];
    }[];
  };
}

export async function snapshotOf(runDir: string): Promise<Snapshot> {
  return JSON.parse(await readFile(path.join(runDir, 'snapshot.json'), 'utf8')) as Snapshot;
}

export function mountLabel(s: Snapshot, target: string): string[] {
  return s.cfc.mounts.find((m) => m.target === target)?.label?.confidentiality ?? [];
}

/** One cfh invocation whose run directory is the only new one under `artifactRoot`. */
export async function runIn(
  artifactRoot: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ r: CfhResult; dir: string | undefined }> {
  const before = new Set(await runDirs(artifactRoot));
  const r = await cfh(['sandbox', 'run', '--artifact-root', artifactRoot, ...args], { env });
  const dir = (await runDirs(artifactRoot)).find((d) => !before.has(d));
  return { r, dir };
}

export async function transcriptText(runDir: string): Promise<string> {
  const names = await readdir(runDir);
  const out: string[] = [];
  for (const n of names)
    if (n.startsWith('transcript')) out.push(await readFile(path.join(runDir, n), 'utf8'));
  return out.join('\n');
}

/** Mounts a small tmpfs at `at` (a file system of its own); root only. */
export async function mountTmpfs(at: string): Promise<void> {
  await mkdir(at, { recursive: true });
  await execa('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0755', 'tmpfs', at]);
}

export async function umount(at: string): Promise<void> {
  await execa('umount', ['-l', at], { reject: false });
}
