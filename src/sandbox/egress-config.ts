// The host-side directory holding a sandbox's resolv.conf, bind-mounted read-only into it
//. Under the shared temporary directory, so it must be neither predictable nor
// pre-creatable by another local user: its name carries 128 random bits, it is created
// exclusively (mkdir without `recursive` fails on anything already there, a symlink
// included) and private (0700), and the file is created exclusively too ('wx'). The
// directory's path is recorded as a label on the run's network, so `cfh reap` removes the
// one cfh made, and only a directory of that shape that this user owns.
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { removeTree } from '../remove-tree.js';

/** The label on a run's network naming its config directory. */
export const LABEL_EGRESS_CONFIG = 'cfh.egress-config';

export function egressConfigDir(runId: string): string {
  return path.join(os.tmpdir(), `cfh-egress-${runId}-${randomBytes(16).toString('hex')}`);
}

/** Creates the directory and its resolv.conf (naming `nameserver`); fails if either exists. */
export async function createEgressConfig(dir: string, nameserver: string): Promise<string> {
  await mkdir(dir, { mode: 0o700 });
  const file = path.join(dir, 'resolv.conf');
  try {
    await writeFile(file, `nameserver ${nameserver}\noptions ndots:0 timeout:2 attempts:1\n`, {
      mode: 0o644,
      flag: 'wx',
    });
  } catch (error) {
    await removeTree(dir);
    throw error;
  }
  return file;
}

/** Whether `dir` has the shape cfh gives a config directory of run `runId`. */
export function isEgressConfigDir(dir: string, runId: string): boolean {
  return (
    path.isAbsolute(dir) &&
    path.normalize(dir) === dir &&
    new RegExp(`^cfh-egress-${runId.replace(/[^0-9A-Za-z-]/g, '')}-[0-9a-f]{32}$`).test(
      path.basename(dir),
    )
  );
}

/**
 * Removes a config directory named by a label: only one of cfh's shape for that run, a
 * real directory (not a symlink) owned by this user. Anything else is left alone.
 */
export async function removeEgressConfig(dir: string, runId: string): Promise<boolean> {
  if (!isEgressConfigDir(dir, runId)) return false;
  const stat = await lstat(dir).catch(() => undefined);
  if (stat === undefined || !stat.isDirectory() || stat.uid !== process.getuid?.()) return false;
  await removeTree(dir);
  return true;
}
