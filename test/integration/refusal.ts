// A configuration refusal as the user sees it, with a deadline: cfh must answer (exit 125,
// nothing created) promptly. A cfh still running at the deadline is sent SIGTERM, to record
// whether it honours it, then SIGKILL, and the test fails: no input may make cfh hang.
import { readdir } from 'node:fs/promises';
import { expect } from 'vitest';
import { execa } from 'execa';
import { CFH_MAIN, REPO_ROOT, baseEnv, docker, type CfhResult } from './helpers.js';

export const REFUSAL_DEADLINE_MS = 15_000;

function sleep(ms: number): Promise<'timeout'> {
  return new Promise((resolve) => {
    setTimeout(() => {
      resolve('timeout');
    }, ms);
  });
}

/**
 * Runs `cfh args` (or `under... node main.js args`); after it exits, checks that
 * `artifactRoot` was not created and that no container or network carries that cfh's pid
 * as its owner.
 */
export async function refusal(
  args: readonly string[],
  artifactRoot: string,
  options: {
    readonly env?: Record<string, string>;
    /** Runs cfh under this command (`unshare -m sh -c ...`): its last argument is cfh's argv. */
    readonly under?: readonly string[];
  } = {},
): Promise<CfhResult> {
  const argv = [process.execPath, CFH_MAIN, ...args];
  const [file = '', ...rest] = options.under === undefined ? argv : [...options.under, ...argv];
  const child = execa(file, rest, {
    reject: false,
    extendEnv: false,
    stripFinalNewline: false,
    env: baseEnv(options.env),
    cwd: REPO_ROOT,
  });
  const state = { settled: false };
  void child.finally(() => {
    state.settled = true;
  });
  try {
    const result = await Promise.race([child, sleep(REFUSAL_DEADLINE_MS)]);
    if (result === 'timeout') {
      child.kill('SIGTERM');
      const afterTerm = await Promise.race([child.then(() => 'exited'), sleep(3_000)]);
      throw new Error(
        `cfh was still running after ${REFUSAL_DEADLINE_MS} ms; after SIGTERM: ${afterTerm === 'timeout' ? 'still running (SIGTERM ignored)' : 'exited'}`,
      );
    }
    await expect(readdir(artifactRoot), 'the artifact root was created').rejects.toThrow();
    // Engine objects are looked up by this cfh's owner label, not by a global count, so
    // another run on the same engine cannot disturb the check.
    const owned = { label: [`cfh.owner-pid=${String(child.pid)}`] };
    const [containers, networks] = await Promise.all([
      docker.listContainers({ all: true, filters: owned }),
      docker.listNetworks({ filters: owned }),
    ]);
    expect([...containers, ...networks]).toEqual([]);
    return {
      exitCode: result.exitCode ?? -1,
      stdout: result.stdout,
      stderr: result.stderr,
      pid: child.pid ?? -1,
    };
  } finally {
    if (!state.settled) child.kill('SIGKILL');
    await child.catch(() => undefined);
  }
}

/** Exit 125, nothing on stdout, one line on stderr matching `pattern`. */
export function expectOneLineRefusal(r: CfhResult, pattern: RegExp): void {
  expect(r.exitCode, r.stderr).toBe(125);
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
}
