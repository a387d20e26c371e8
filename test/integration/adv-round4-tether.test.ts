// Adversarial round 4, class 1 (the command's tether, AH-LIFE-3). The tether is an exec of
// /bin/sh in the command's container, reading cfh's attach; it runs as the command's own
// user. The command cannot kill it unnoticed (cfh hears the exec end), but it can STOP it:
// a stopped shell never reads the EOF the engine gives it when cfh dies, so it never runs
// its `kill -KILL -1`. The command then outlives a SIGKILLed cfh and keeps writing the
// workspace. This test asserts cfh holds: after cfh is SIGKILLed nothing more is written.
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { docker, ownBySandbox, startCfh, useScratch } from './helpers.js';

const scratch = useScratch('adv4-tether');
const started: number[] = [];

afterAll(async () => {
  // Remove only what our own cfh processes made.
  for (const pid of started) {
    const mine = await docker.listContainers({
      all: true,
      filters: { label: [`cfh.owner-pid=${pid}`] },
    });
    for (const c of mine) await docker.getContainer(c.Id).remove({ force: true });
  }
});

async function tick(file: string): Promise<number> {
  try {
    return Number((await readFile(file, 'utf8')).trim());
  } catch {
    return -1;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('adv round 4: the command tether', () => {
  // Closed by the host tether (substrate/docker/host-tether.ts): a host process the command
  // cannot reach kills the container when cfh's pipe to it ends.
  it('a command that SIGSTOPs its tether does not outlive a SIGKILLed cfh', async () => {
    const ws = scratch.path('ws');
    const art = scratch.path('art');
    await mkdir(ws, { recursive: true });
    await mkdir(art, { recursive: true });
    await ownBySandbox(ws);
    // Stop every other process whose command line is the tether's script (not our own
    // shell, whose command line holds the same words), then write a counter forever.
    const script = [
      'sleep 2',
      'for p in /proc/[0-9]*; do n=${p#/proc/}; [ "$n" = "$$" ] && continue',
      '[ "$n" = 1 ] && continue',
      'c=$(tr "\\0" " " < $p/cmdline 2>/dev/null)',
      'case "$c" in *"IFS= read -r _"*) kill -STOP $n && echo stopped $n >> /workspace/stopped ;; esac; done',
      'i=0; while true; do i=$((i+1)); echo $i > /workspace/tick; sleep 0.2; done',
    ].join('\n');
    const child = startCfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      ws,
      '--artifact-root',
      art,
      '--',
      'sh',
      '-c',
      script,
    ]);
    started.push(child.pid ?? -1);
    const tickFile = path.join(ws, 'tick');
    const deadline = Date.now() + 60_000;
    while ((await tick(tickFile)) < 5 && Date.now() < deadline) await sleep(200);
    expect(await tick(tickFile)).toBeGreaterThanOrEqual(5);
    // The tether was found and stopped (the precondition of the attack).
    expect(await readFile(path.join(ws, 'stopped'), 'utf8')).toMatch(/stopped \d+/);
    child.kill('SIGKILL');
    await child;
    // Give the engine the time the tether would need to act.
    await sleep(5_000);
    const after = await tick(tickFile);
    await sleep(3_000);
    const later = await tick(tickFile);
    // cfh holds: nothing of the command writes after its cfh is gone.
    expect(later).toBe(after);
  });
});
