// Found by our adversarial round against the fixes: planning mode's "no channel out of ro mounts" (governance extension,
// "Planning mode"; AH-CONT-1) closes unix sockets and FIFOs, not file locks. flock(2) and
// fcntl(F_SETLK) take a lock through a read-only descriptor of a file on a ro bind mount,
// and under runc that lock is the host kernel's: a host process that runs a job only when
// it gets `job.lock` (flock -n, a cron guard, a deploy lock) is stopped, or signalled bit by
// bit, by a plan-mode exec. Against a lock the test itself polls on the host, runc only.
import { execa } from 'execa';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, ownBySandbox, readEvents, useScratch } from './helpers.js';
import { eventsOf, execScript } from './approval-support.js';
import { engineRuntimes } from './network-harness.js';

const scratch = useScratch('plan-locks');

const PROBE = String.raw`
import fcntl, time
f = open('/workspace/job.lock', 'rb')
fcntl.flock(f, fcntl.LOCK_EX)
print('@@ locked', flush=True)
time.sleep(6)
`;

describe('class: a plan-mode exec makes a host process act', () => {
  it('a lock taken on a ro-mounted file is not seen by a host process', async (ctx) => {
    if (!(await engineRuntimes()).includes('runc')) ctx.skip('the engine has no runc runtime');
    const repo = await scratch.sampleRepo();
    await writeFile(path.join(repo, 'probe.py'), PROBE);
    await writeFile(path.join(repo, 'job.lock'), '');
    await ownBySandbox(path.join(repo, 'probe.py'));
    const script = await scratch.file('s.yaml', execScript([['python3', '/workspace/probe.py']]));
    const root = scratch.path('art');
    const run = cfh(
      agentRunArgs(
        { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script, prompt: 'plan' },
        ['--plan', '--workspace-mode', 'ro', '--runtime', 'runc'],
      ),
    );
    // The host's job runner: it runs only when it gets the lock at once.
    let blocked = 0;
    let polls = 0;
    const state = { done: false };
    void run.finally(() => (state.done = true));
    while (!state.done) {
      const r = await execa('flock', ['-n', path.join(repo, 'job.lock'), 'true'], {
        reject: false,
      });
      polls += 1;
      if (r.exitCode !== 0) blocked += 1;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const r = await run;
    expect(r.exitCode, r.stderr).toBe(0);
    const events = await readEvents(await onlyRunDir(root));
    // The probe's flock is refused (EPERM: python raises, the call fails), and the host's
    // job runner got its lock every time (before: refused 28 times in a row).
    expect(eventsOf(events, 'call-0001', 'tool_executed')[0]?.data.status).toBe('error');
    expect({ blocked, polled: polls > 0 }).toEqual({ blocked: 0, polled: true });
  });
});
