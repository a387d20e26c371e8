// The syscall probe (test/fixtures/probe/probe.c) for the seccomp escape battery: built
// once per test process with the machine's gcc, statically, so it runs in any image, and
// its output read back into one result per case.
import { execa } from 'execa';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from './helpers.js';

export const PROBE_SOURCE = path.join(REPO_ROOT, 'test', 'fixtures', 'probe', 'probe.c');

export interface ProbeResult {
  readonly ok: boolean;
  readonly errno: number;
  readonly err: string;
}

let built: Promise<string> | undefined;

/**
 * Compiles probe.c into a fresh temp directory (once per process) and returns the
 * DIRECTORY, meant to be mounted read-only at /probe. Directory and binary are 0755 so the
 * sandbox's unprivileged user can execute it. `removeProbe()` deletes it again.
 */
export function buildProbe(): Promise<string> {
  built ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-probe-'));
    const binary = path.join(dir, 'probe');
    const r = await execa('gcc', ['-static', '-O1', '-o', binary, PROBE_SOURCE], {
      reject: false,
    });
    if (r.exitCode !== 0)
      throw new Error(`gcc -static failed to build the probe (exit ${r.exitCode}):\n${r.stderr}`);
    await chmod(dir, 0o755);
    await chmod(binary, 0o755);
    return dir;
  })();
  return built;
}

/** Deletes the built probe, if any; the next buildProbe() compiles afresh. */
export async function removeProbe(): Promise<void> {
  const pending = built;
  built = undefined;
  if (pending === undefined) return;
  const dir = await pending.catch(() => undefined);
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}

/** One entry per JSON line `{"case","ok","errno","err"}`; other lines are ignored. */
export function parseProbe(stdout: string): Map<string, ProbeResult> {
  const results = new Map<string, ProbeResult>();
  for (const line of stdout.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed.startsWith('{')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      continue;
    }
    if (typeof parsed !== 'object' || parsed === null) continue;
    const { case: name, ok, errno, err } = parsed as Record<string, unknown>;
    if (
      typeof name !== 'string' ||
      typeof ok !== 'boolean' ||
      typeof errno !== 'number' ||
      typeof err !== 'string'
    )
      continue;
    results.set(name, { ok, errno, err });
  }
  return results;
}
