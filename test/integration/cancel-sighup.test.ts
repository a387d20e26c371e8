// SIGHUP (cfh's terminal went away) cancels a run as SIGTERM does (AH-LIFE-3): the command's
// container is stopped and removed, nothing of it writes afterwards, the run ends
// `cancelled:SIGHUP` with exit status 129 and its evidence audits.
import { execa } from 'execa';
import { access, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, startCfh, useScratch } from './helpers.js';

const scratch = useScratch('sighup');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );

describe('SIGHUP cancels a run', () => {
  it('cfh sandbox run: exit 129, cancelled:SIGHUP, its container gone, no write afterwards', async () => {
    const repo = await scratch.sampleRepo();
    const art = scratch.path('art');
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
      'sleep 3; echo late > /workspace/after-hup',
    ]);
    child.catch(() => undefined);
    let runId = '';
    for (let i = 0; i < 200 && runId === ''; i += 1) {
      const runs = await readdir(art).catch(() => [] as string[]);
      const events =
        runs[0] === undefined
          ? ''
          : await readFile(path.join(art, runs[0], 'events.jsonl'), 'utf8').catch(() => '');
      if (events.includes('container_started"')) runId = runs[0] ?? '';
      else await sleep(100);
    }
    expect(runId, 'the command started').not.toBe('');
    await sleep(500);
    child.kill('SIGHUP');
    const ended = await child.catch((e: unknown) => e as { exitCode?: number });
    // Its container is gone when cfh exits: nothing is left for a reaper to find.
    const left = await execa('docker', ['ps', '-aq', '--filter', `label=cfh.run-id=${runId}`]);
    await sleep(4000);
    expect(ended.exitCode).toBe(129);
    expect(left.stdout).toBe('');
    expect(await exists(path.join(repo, 'after-hup'))).toBe(false);
    const state = JSON.parse(await readFile(path.join(art, runId, 'state.json'), 'utf8')) as {
      state: string;
      terminalReason: string;
    };
    expect(state).toMatchObject({ state: 'cancelled', terminalReason: 'cancelled:SIGHUP' });
    const audit = await cfh(['audit', path.join(art, runId)]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
  });
});
