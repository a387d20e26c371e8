// Every container of a run mounts exactly the objects cfh checked (AH-CONT-1), however long
// after planning it is created. Two checks:
// - before each create, every source must still be the object checked at planning (device
//   and inode); a source replaced since (a symlink to /, a renamed directory) is refused;
// - under runc, where a bind mount shows the host's device and inode inside the container,
//   the container starts with a gate: a POSIX shell script (the image's /bin/sh and stat)
//   that prints the device and inode found at each mount target, then waits on stdin for
//   cfh's word before it runs the workload. cfh compares and says `go`, or removes the
//   container: a swap that won the race between the check and the engine's mount is caught
//   before anything of the workload runs.
// The gate runs with the image's environment only (the container's Env is empty), so
// nothing of the profile's env (LD_PRELOAD, ...) reaches its shell or stat; it hands the
// workload exactly the spec's env with `env -i`.
import { statSync } from 'node:fs';
import type { ContainerSpec, MountIdentity, SpecMount } from './container-spec.js';
import { ContainmentError } from '../errors.js';

export const GATE_SCRIPT = [
  'n=$1; shift',
  'while [ "$n" -gt 0 ]; do',
  "  stat -c 'cfh-gate %d:%i' -- \"$1\" || printf 'cfh-gate unreadable\\n'",
  '  shift; n=$((n-1))',
  'done',
  "printf 'cfh-gate-end\\n'",
  'IFS= read -r word || exit 125',
  '[ "$word" = go ] || exit 125',
  'exec env -i "$@"',
].join('\n');

export const GATE_END = 'cfh-gate-end';
export const GATE_WORD = 'go\n';
/** The gate's report is a line a mount; more than this is not a gate speaking. */
export const GATE_REPORT_MAX_BYTES = 64 * 1024;
export const GATE_TIMEOUT_MS = 15_000;

/** The mounts a gate checks: those with a recorded identity. */
export function gatedMounts(spec: ContainerSpec): readonly SpecMount[] {
  return spec.mountCheck === 'gate' ? spec.mounts.filter((m) => m.identity !== undefined) : [];
}

/** The container's command: the gate, then the workload with the spec's env. */
export function gatedCommand(spec: ContainerSpec): string[] {
  const mounts = gatedMounts(spec);
  return [
    '/bin/sh',
    '-c',
    GATE_SCRIPT,
    'cfh-gate',
    String(mounts.length),
    ...mounts.map((m) => m.target),
    ...Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
    ...spec.command,
  ];
}

/** Compares the gate's report lines with the identities cfh checked. */
export function verifyGateReport(spec: ContainerSpec, lines: readonly string[]): void {
  const mounts = gatedMounts(spec);
  const seen = lines.filter((l) => l.startsWith('cfh-gate ')).map((l) => l.slice(9).trim());
  const problems: string[] = [];
  mounts.forEach((m, i) => {
    const want = `${m.identity?.dev}:${m.identity?.ino}`;
    const got = seen[i];
    if (got !== want)
      problems.push(`${m.target}: expected ${want} (${m.source}), found ${got ?? 'nothing'}`);
  });
  if (seen.length !== mounts.length && problems.length === 0)
    problems.push(`the gate reported ${seen.length} mounts, ${mounts.length} expected`);
  if (problems.length > 0) {
    throw new ContainmentError(
      'mount_mismatch',
      `the engine did not mount what cfh checked: ${problems.join('; ')}`,
      { mounts: problems },
    );
  }
}

/** Before a create: every source is still the object checked at planning. */
export function recheckSources(spec: ContainerSpec): void {
  for (const m of spec.mounts) {
    if (m.identity === undefined) continue;
    let now: MountIdentity | undefined;
    try {
      const s = statSync(m.source, { bigint: true });
      now = { dev: String(s.dev), ino: String(s.ino) };
    } catch {
      now = undefined;
    }
    if (now?.dev !== m.identity.dev || now.ino !== m.identity.ino) {
      throw new ContainmentError(
        'mount_source_changed',
        `mount source '${m.source}' (at ${m.target}) is no longer the object cfh checked (was ${m.identity.dev}:${m.identity.ino}, now ${now === undefined ? 'gone' : `${now.dev}:${now.ino}`}); refusing to create the container`,
        { source: m.source, target: m.target },
      );
    }
  }
}
