// Where `cfh runs export` and `cfh runs report` write (output-target.ts). The class: a
// command that drops a file into whatever directory the operator stands in. Now: stdout
// by default, into a pipe; a terminal is refused with the fix; `--out -` is stdout in so
// many words; `--out FILE` as before, never inside the run directory; and nothing is ever
// written into the current directory unless named. The terminal is a real pty (script(1)).
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { baseEnv, CFH_MAIN, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';

const scratch = useScratch('run-output');
let root: string;
let runId: string;
let cwd: string;

beforeAll(async () => {
  const ws = await scratch.sampleRepo();
  root = scratch.path('art');
  const r = await cfh(['sandbox', 'run', '--workspace', ws, '--artifact-root', root, '--', 'true']);
  expect(r.exitCode, r.stderr).toBe(0);
  runId = runIdOf(await onlyRunDir(root));
  cwd = scratch.path('stand-here');
  await mkdir(cwd);
});

/** cfh on a pseudo-terminal: stdout is a TTY, as for an operator typing the command. */
function onTerminal(args: readonly string[]): { status: number | null; output: string } {
  const cmd = [process.execPath, CFH_MAIN, ...args].join(' ');
  const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { cwd, env: baseEnv() });
  return { status: r.status, output: r.stdout.toString() };
}

describe('runs export and runs report write to stdout, never to the current directory', () => {
  it('export: JSON into a pipe; a terminal refused with the fix; --out - and --out FILE', async () => {
    const piped = await cfh(['runs', 'export', runId, '--artifact-root', root], { cwd });
    expect(piped.exitCode, piped.stderr).toBe(0);
    const trace = JSON.parse(piped.stdout) as { resourceSpans: unknown[] };
    expect(trace.resourceSpans.length).toBeGreaterThan(0);
    const tty = onTerminal(['runs', 'export', runId, '--artifact-root', root]);
    expect(tty.status).toBe(2);
    expect(tty.output).toContain(
      'cfh: refusing to write OTLP JSON to a terminal; give --out FILE or pipe it',
    );
    expect(tty.output).not.toContain('resourceSpans');
    const dash = await cfh(['runs', 'export', runId, '--artifact-root', root, '--out', '-'], {
      cwd,
    });
    expect(JSON.parse(dash.stdout)).toEqual(trace);
    const file = scratch.path('trace.json');
    const named = await cfh(['runs', 'export', runId, '--artifact-root', root, '--out', file], {
      cwd,
    });
    expect(named.stdout.trim()).toBe(file);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(trace);
    expect(await readdir(cwd)).toEqual([]);
  });

  it('report: the page into a pipe; a terminal refused; --json needs --out; inside the run refused', async () => {
    const piped = await cfh(['runs', 'report', runId, '--artifact-root', root], { cwd });
    expect(piped.exitCode, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^<!doctype html>/i);
    const tty = onTerminal(['runs', 'report', runId, '--artifact-root', root]);
    expect(tty.status).toBe(2);
    expect(tty.output).toContain(
      'cfh: refusing to write the HTML report to a terminal; give --out FILE or pipe it',
    );
    const json = await cfh(['runs', 'report', runId, '--artifact-root', root, '--json'], { cwd });
    expect(json.exitCode).toBe(2);
    expect(json.stdout).toContain('give --out FILE');
    // Variant: a path into the run directory, spelled through `..`, still refused.
    const sneaky = path.join(root, runId, 'outputs', '..', 'page.html');
    const inside = await cfh(['runs', 'report', runId, '--artifact-root', root, '--out', sneaky]);
    expect(inside.exitCode).toBe(2);
    expect(inside.stderr).toMatch(/inside the run directory/);
    expect(await readdir(cwd)).toEqual([]);
  });
});
