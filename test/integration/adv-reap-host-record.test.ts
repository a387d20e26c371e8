// Adversarial round, fixed (AH-LIFE-3). Class: `cfh reap` signalling a process identified by
// data it did not verify is still the process cfh started. A host-process ledger record is
// acted on only when cfh can believe it (src/tools/host/ledger-trust.ts: a regular 0600 file
// of cfh's uid, no link, in a directory only cfh's user can write), and even then a pid is
// signalled only while /proc shows the start time the record holds
// (src/tools/host/host-process.ts, stopTree). The ledger is refused inside any mount of a
// run (mount-policy.ts, checkHostProcessLedger), as the artifact root and the signing key.
// Every victim here is a process group of the test's own, nothing cfh ever started.
import { spawn } from 'node:child_process';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { processStart } from '../../src/sandbox/owner.js';
import { cfh, useScratch } from './helpers.js';

const scratch = useScratch('adv-reap');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!alive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return !alive(pid);
}

/** A detached `sleep`: its own process group, reaped by the test when it dies. */
function victim(): { pid: number; start: string } {
  const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  const pid = child.pid ?? -1;
  expect(pid).toBeGreaterThan(0);
  const start = processStart(pid);
  expect(start).toBeDefined();
  return { pid, start: start ?? '' };
}

let seq = 0;
/** A record as cfh writes one, for `pid` (and `start` when given), named after its marker. */
function record(runId: string, pid: number, start: string | undefined) {
  seq += 1;
  const marker = `${runId}.host__x.${seq}.adadadadadadadad`;
  return {
    name: `${marker}.json`,
    body: JSON.stringify({
      schema: 'cfh.host-process/1',
      runId,
      tool: 'host__x',
      marker,
      // An owner that is gone: no such pid.
      owner: { pid: 4_194_000, start: 'none/1', host: hostname() },
      command: '/bin/true',
      startedAt: new Date().toISOString(),
      pid,
      ...(start === undefined ? {} : { start }),
    }),
  };
}

const ReapJson = z.array(
  z.looseObject({ kind: z.string(), id: z.string(), action: z.string(), runId: z.string() }),
);

describe('adv: reap acts only on a process it can prove is the one cfh recorded', () => {
  it('signals no pid by a record without a start time, with a stale start, a link or a loose mode', async () => {
    const state = scratch.path('state');
    const ledger = path.join(state, 'host-processes');
    await mkdir(ledger, { recursive: true, mode: 0o700 });
    const runId = '20261201T000000Z-adadadad';
    const v = {
      noStart: victim(),
      reused: victim(),
      linked: victim(),
      loose: victim(),
      attacker: victim(),
      ours: victim(),
    };
    try {
      const put = async (r: { name: string; body: string }, mode = 0o600): Promise<string> => {
        const file = path.join(ledger, r.name);
        await writeFile(file, r.body, { mode });
        await chmod(file, mode);
        return file;
      };
      // The attacker's own spelling: no start, the default mode, any name.
      await writeFile(
        path.join(ledger, 'forged.json'),
        record(runId, v.attacker.pid, undefined).body,
      );
      // Well-formed, 0600, cfh's uid: but the pid alone names no process (pid reuse).
      await put(record(runId, v.noStart.pid, undefined));
      // A start time that is not the live process's: the pid was reused since.
      const [boot] = v.reused.start.split('/');
      await put(record(runId, v.reused.pid, `${boot ?? ''}/1`));
      // A record that would match exactly, but through a link, or not 0600: not cfh's.
      const outside = await scratch.file(
        'outside.json',
        record(runId, v.linked.pid, v.linked.start).body,
      );
      await chmod(outside, 0o600);
      const linkRecord = record(runId, v.linked.pid, v.linked.start);
      await symlink(outside, path.join(ledger, linkRecord.name));
      const looseFile = await put(record(runId, v.loose.pid, v.loose.start), 0o644);
      // The control: exactly what cfh writes, for a live process whose start matches.
      await put(record(runId, v.ours.pid, v.ours.start));

      const r = await cfh(['reap', '--run', runId, '--json'], { env: { CFH_STATE_DIR: state } });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(await waitGone(v.ours.pid, 3000), 'the control record reaps its group').toBe(true);
      for (const [name, p] of Object.entries(v)) {
        if (name !== 'ours') expect(alive(p.pid), `${name}: ${r.stdout}`).toBe(true);
      }
      const entries = ReapJson.parse(JSON.parse(r.stdout));
      const ignored = entries.filter((e) => e.action === 'ignored').map((e) => e.id);
      expect(ignored).toEqual(
        expect.arrayContaining([
          path.join(ledger, 'forged.json'),
          path.join(ledger, linkRecord.name),
          looseFile,
        ]),
      );
    } finally {
      for (const p of Object.values(v)) if (alive(p.pid)) process.kill(-p.pid, 'SIGKILL');
    }
  }, 60_000);

  it('believes no record in a ledger directory others can write', async () => {
    const state = scratch.path('state-open');
    const ledger = path.join(state, 'host-processes');
    await mkdir(ledger, { recursive: true });
    await chmod(ledger, 0o777);
    const runId = '20261201T000000Z-bdbdbdbd';
    const p = victim();
    try {
      const r0 = record(runId, p.pid, p.start);
      await writeFile(path.join(ledger, r0.name), r0.body, { mode: 0o600 });
      const r = await cfh(['reap', '--run', runId], { env: { CFH_STATE_DIR: state } });
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toContain('ignored');
      expect(r.stdout).toContain('writable by its group or others');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(alive(p.pid), r.stdout).toBe(true);
    } finally {
      if (alive(p.pid)) process.kill(-p.pid, 'SIGKILL');
    }
  }, 60_000);

  it('refuses a run whose mount exposes the host-process ledger', async () => {
    const workspace = scratch.path('ws');
    await mkdir(workspace, { recursive: true });
    // The ledger does not exist yet: a sandbox could create it with forged records.
    const r = await cfh(['sandbox', 'run', '--workspace', workspace, '--', 'true'], {
      env: {
        CFH_STATE_DIR: path.join(workspace, '.state'),
        CFH_ARTIFACT_ROOT: scratch.path('artifacts'),
      },
    });
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toMatch(
      /^cfh: the host-process ledger '.*' would be reachable in the sandbox/m,
    );
  }, 60_000);
});
