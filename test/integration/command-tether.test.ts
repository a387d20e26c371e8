// A command run's container lives no longer than its cfh (AH-LIFE-3; engine/command/command-tether.ts):
// a cfh SIGKILLed mid-command leaves a stopped container whose command writes nothing more
// (reaped later, as ever), and a command that cuts the tether while cfh lives is stopped and
// fails the run `command_tether_lost`.
import { execa } from 'execa';
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, startCfh, useScratch } from './helpers.js';

const scratch = useScratch('tether');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );

async function untilStarted(art: string): Promise<string> {
  for (let i = 0; i < 200; i += 1) {
    const runs = await readdir(art).catch(() => [] as string[]);
    const events =
      runs[0] === undefined
        ? ''
        : await readFile(path.join(art, runs[0], 'events.jsonl'), 'utf8').catch(() => '');
    if (events.includes('container_started"')) return runs[0] ?? '';
    await sleep(100);
  }
  return '';
}

async function containers(runId: string): Promise<string[]> {
  const ps = await execa('docker', ['ps', '-aq', '--filter', `label=cfh.run-id=${runId}`]);
  return ps.stdout.split('\n').filter((x) => x !== '');
}

describe('the command tether', () => {
  it('cfh SIGKILLed mid-command: the container stops at once and its command writes nothing more', async () => {
    const repo = await scratch.sampleRepo();
    const art = scratch.path('art-kill');
    const child = startCfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--',
      'sh',
      '-c',
      'sleep 4; echo late > /workspace/after-kill',
    ]);
    child.catch(() => undefined);
    const runId = await untilStarted(art);
    expect(runId, 'the command started').not.toBe('');
    await sleep(1000);
    child.kill('SIGKILL');
    await child.catch(() => undefined);
    try {
      await sleep(1500);
      // Stopped (or already reaped by another cfh's start sweep): nothing of it runs.
      for (const id of await containers(runId)) {
        const state = await execa('docker', ['inspect', '-f', '{{.State.Running}}', id], {
          reject: false,
        });
        expect(state.stdout.trim()).not.toBe('true');
      }
      await sleep(3000);
      expect(await exists(path.join(repo, 'after-kill'))).toBe(false);
    } finally {
      const left = await containers(runId);
      if (left.length > 0) await execa('docker', ['rm', '-f', ...left], { reject: false });
    }
  });

  it('a command that kills its tether is stopped: the run fails command_tether_lost', async () => {
    const repo = await scratch.sampleRepo();
    const art = scratch.path('art-cut');
    // The tether is the other shell in the container, the one reading its stdin (not this one,
    // whose script names it too). cfh kills the container within the tether's end grace.
    const cut = [
      'sleep 1',
      'for d in /proc/[0-9]*; do',
      '  [ "${d#/proc/}" = "$$" ] && continue',
      '  case "$(tr "\\0" " " < $d/cmdline 2>/dev/null)" in *"read -r _"*) kill -9 ${d#/proc/};; esac',
      'done',
      'sleep 5',
      'echo late > /workspace/after-cut',
    ].join('\n');
    const r = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      art,
      '--json',
      '--',
      'sh',
      '-c',
      cut,
    ]);
    await sleep(1000);
    expect(r.exitCode, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'failed',
      terminalReason: 'error:command_tether_lost',
    });
    expect(await exists(path.join(repo, 'after-cut'))).toBe(false);
  });
});
