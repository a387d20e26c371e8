// What a command loads is what it pays at start-up (issue 21): the guard runs the real entry
// point (the sources, unbuilt) under a hook that records every module the process resolves,
// and checks the list. `cfh --version` loads the entry point, the Node check and the version
// and nothing else: no engine, model, MCP or dockerode module. A command run loads the
// engine client but not the agent path (model SDKs, MCP, the host-tool channel) nor the
// commands it is not (audit, report). No wall time is measured: module lists are stable on
// a shared machine, timings are not (those are in bench/startup.ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const HOOK = path.join(ROOT, 'test/fixtures/startup/record-modules.mjs');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cfh-startup-'));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});
let n = 0;

/** The modules a node process resolves, as paths relative to the package (or node:…). */
function modulesLoaded(args: readonly string[]): { modules: string[]; stdout: string } {
  n += 1;
  const out = path.join(tmp, `modules-${String(n)}.txt`);
  const r = spawnSync(process.execPath, ['--import', pathToFileURL(HOOK).href, ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, CFH_RECORD_MODULES: out, NODE_OPTIONS: '' },
  });
  expect(r.status, r.stderr).toBe(0);
  const modules = readFileSync(out, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((u) => (u.startsWith('file:') ? path.relative(ROOT, new URL(u).pathname) : u));
  return { modules, stdout: r.stdout };
}

/** Modules of cfh's own layers and the dependencies that no `--version` may load. */
const HEAVY = [
  /^src\/(engine|model|substrate|sandbox|network|mediator|tools|evidence|config)\//,
  /^node_modules\/(dockerode|docker-modem|@anthropic-ai|openai|@modelcontextprotocol|zod|commander|pino|yaml|execa)\//,
];
const AGENT_PATH = [
  /^src\/model\//,
  /^src\/tools\/host\/(mcp-|exec-channel)/,
  /^src\/engine\/agent-/,
  /^src\/evidence\/(audit|report|export)\//,
  /^node_modules\/(@anthropic-ai|openai|@modelcontextprotocol|execa|ajv)\//,
];
const matching = (modules: readonly string[], patterns: readonly RegExp[]): string[] =>
  modules.filter((m) => patterns.some((p) => p.test(m)));

// Each test runs the unbuilt sources in a process of its own: seconds on a loaded machine,
// and no timing is asserted (above), so the bound is wide.
describe('start-up imports', { timeout: 60_000 }, () => {
  it('`cfh --version` loads the entry point, the Node check and the version only', () => {
    const { modules, stdout } = modulesLoaded(['src/cli/main.ts', '--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(matching(modules, HEAVY)).toEqual([]);
    expect(modules.filter((m) => !m.startsWith('node:')).sort()).toEqual([
      'src/cli/main.ts',
      'src/cli/node-check.ts',
      'src/paths.ts',
      'src/version.ts',
    ]);
  });

  it('the recorder sees what a command loads (the guard above can fail)', () => {
    const { modules } = modulesLoaded(['src/cli/main.ts', 'sandbox', 'run', '--help']);
    expect(matching(modules, HEAVY)).toEqual(
      expect.arrayContaining(['src/substrate/docker/adapter.ts']),
    );
    expect(modules.some((m) => m.startsWith('node_modules/dockerode/'))).toBe(true);
  });

  it('a command run does not load the agent path, the audit or the report', () => {
    const url = pathToFileURL(path.join(ROOT, 'src/cli/commands/sandbox-run.ts')).href;
    const { modules } = modulesLoaded([
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(url)});`,
    ]);
    expect(modules).toContain('src/engine/command/sandbox-run.ts');
    expect(matching(modules, AGENT_PATH)).toEqual([]);
  });
});
