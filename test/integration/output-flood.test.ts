// Output floods (AH-LIFE-4): cfh's memory stays bounded whatever its consumers do, and the
// evidence counts what the command really produced. Here cfh's own stdout is a pipe that
// nobody drains: the run still ends, the evidence copy is complete up to the limit, every
// byte is counted, and what could not be shown live is dropped and said (live_output_dropped).
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  CFH_MAIN,
  REPO_ROOT,
  baseEnv,
  readEvents,
  readJson,
  useScratch,
  waitForEvent,
} from './helpers.js';

const scratch = useScratch('flood');
const FLOOD = 200 * 1024 * 1024;

describe('a flood while cfh stdout is not drained', () => {
  it('ends, counts every byte, keeps the limit in the evidence and reports what was not shown', async () => {
    const ws = await scratch.sampleRepo();
    const art = scratch.path('art');
    const child = spawn(
      process.execPath,
      [
        CFH_MAIN,
        'sandbox',
        'run',
        '--workspace',
        ws,
        '--artifact-root',
        art,
        '--',
        'head',
        '-c',
        String(FLOOD),
        '/dev/zero',
      ],
      { cwd: REPO_ROOT, env: baseEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // Nobody reads stdout: the pipe fills and stays full.
    child.stdout.pause();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    let peakRssKb = 0;
    const poll = setInterval(() => {
      void readFile(`/proc/${child.pid}/status`, 'utf8').then(
        (s) => {
          const kb = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0);
          peakRssKb = Math.max(peakRssKb, kb);
        },
        () => undefined,
      );
    }, 100);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // The run ends and is recorded while cfh's stdout is still full ...
    const dir = await waitForEvent(art, 'run_finished', 60_000);
    // ... then the reader goes away: cfh exits with the command's status, no EPIPE crash.
    child.stdout.destroy();
    const code = await exited;
    clearInterval(poll);
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    const report = await readJson<any>(path.join(dir, 'report.json'));
    const limit = 8 * 1024 * 1024; // profiles/default.yaml outputBytes
    expect(report.outputs.stdout.bytesSeen).toBe(FLOOD);
    expect(report.outputs.stdout.bytesKept).toBe(limit);
    expect(report.outputs.stdout.truncated).toBe(true);
    expect(report.outputs.stdout.liveDropped).toBeGreaterThan(0);
    expect((await stat(path.join(dir, 'outputs', 'stdout'))).size).toBe(limit);
    const events = await readEvents(dir);
    expect(events.find((e) => e.type === 'live_output_dropped')?.data).toMatchObject({
      stream: 'stdout',
    });
    console.log(
      `cfh peak RSS under a ${FLOOD >> 20} MiB flood, stdout undrained: ${peakRssKb >> 10} MiB`,
    );
  });
});
