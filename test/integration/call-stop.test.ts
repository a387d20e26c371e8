// Class 7 of the security round: cancellation stops the work, not only the stream
// (AH-LIFE-3, AH-INT-5). A turn/cancel of `cfh serve --stdio`, an MCP client's
// notifications/cancelled in `cfh mcp`, an agent run's --tool-timeout and SIGINT of
// `cfh sandbox run --prompt` each stop an in-flight exec whose command writes into the
// workspace after a delay, once from its own tree and once from a daemon (double fork,
// setsid, environment cleared). Each asserts: the stop is in the evidence before the call's
// outcome, nothing of the call runs in the container once the outcome is out, neither write
// lands (waited well past the delay), and `cfh audit` passes. Before the fix the command
// went on in the warm per-run container and wrote seconds after the turn said `cancelled`.
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CFH_MAIN,
  REPO_ROOT,
  agentRunArgs,
  baseEnv,
  cfh,
  containersOfRun,
  docker,
  onlyRunDir,
  readEvents,
  runIdOf,
  startCfh,
  toolResults,
  useScratch,
  waitForEvent,
} from './helpers.js';
import { ServeClient } from './serve-support.js';
import {
  DELAY_S,
  expectAudited,
  expectStopBeforeResult,
  landedAfterDelay,
  lateWrites,
  markerProcesses,
  waitForMarker,
} from './call-stop-support.js';

const scratch = useScratch('call-stop');

const exec = (command: readonly string[]) => ({ name: 'exec', input: { command } });

function script(name: string, turns: unknown[]): Promise<string> {
  return scratch.file(name, JSON.stringify({ turns }));
}

describe('class 7: a cancelled call stops its work, not only its stream', () => {
  it('serve: turn/cancel kills the exec call (its daemon too) before the turn says cancelled', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-serve');
    const late = lateWrites();
    const turns = await script('serve.json', [{ tool_calls: [exec(late.argv)] }, { text: 'on' }]);
    const client = new ServeClient([
      ...['--profile', 'untrusted-repo', '--workspace', repo, '--artifact-root', root],
      ...['--script', turns],
    ]);
    const opened = await client.call('session/open', {});
    const sessionId = String(opened.sessionId);
    const runDir = String(opened.runDir);
    const container = `cfh-tools-${String(opened.runId)}`;
    const { turnId } = await client.call('turn/start', { sessionId, prompt: 'write late' });
    await waitForMarker(container, late.marker);
    const at = Date.now();
    await client.call('turn/cancel', { sessionId });
    expect(await client.note('turn/completed', (p) => p.turnId === turnId)).toMatchObject({
      status: 'cancelled',
    });
    // When the turn says cancelled, nothing of the call runs any more.
    expect(await markerProcesses(container, late.marker)).toEqual([]);
    const events = await readEvents(runDir);
    const stop = expectStopBeforeResult(events, 'call-0001', 'cancelled', 'tool_call_aborted');
    const completed = events.find((e) => e.type === 'turn_completed');
    expect(stop.seq).toBeLessThan(completed?.seq ?? -1);
    expect(await landedAfterDelay(repo, late, at)).toEqual([]);
    // The session goes on in the same container.
    expect(await client.turn(sessionId, 'go on')).toMatchObject({
      status: 'answered',
      finalAnswer: 'on',
    });
    await client.call('session/close', { sessionId });
    expect(await client.end()).toBe(0);
    await expectAudited(runDir);
  });

  it('mcp: notifications/cancelled kills the exec call (its daemon too) before it is answered', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-mcp');
    const late = lateWrites();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        ...[CFH_MAIN, 'mcp', '--profile', 'untrusted-repo'],
        ...['--workspace', repo, '--artifact-root', root],
      ],
      env: baseEnv(),
      cwd: REPO_ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'cfh-test-client', version: '1.0.0' });
    await client.connect(transport);
    const abort = new AbortController();
    const pending = client.callTool(
      { name: 'sandbox_exec', arguments: { argv: late.argv } },
      undefined,
      { signal: abort.signal, timeout: 120_000 },
    );
    const runDir = await waitForEvent(root, 'permission_decision');
    const container = `cfh-tools-${runIdOf(runDir)}`;
    await waitForMarker(container, late.marker);
    const at = Date.now();
    abort.abort();
    await expect(pending).rejects.toThrow();
    await waitForEvent(root, 'tool_call_aborted');
    expect(await markerProcesses(container, late.marker)).toEqual([]);
    expectStopBeforeResult(await readEvents(runDir), 'call-0001', 'cancelled', 'tool_call_aborted');
    expect(await landedAfterDelay(repo, late, at)).toEqual([]);
    await client.close();
    await waitForEvent(root, 'run_finished');
    expect(await containersOfRun(runIdOf(runDir))).toEqual([]);
    await expectAudited(runDir);
  });

  it('SIGINT of `cfh sandbox run --prompt` kills an in-flight exec and records it before the run ends', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-sigint');
    const late = lateWrites();
    const turns = await script('sigint.json', [{ tool_calls: [exec(late.argv)] }, { text: 'no' }]);
    const child = startCfh(
      agentRunArgs({
        workspace: repo,
        artifactRoot: root,
        profile: 'untrusted-repo',
        script: turns,
      }),
    );
    const runDir = await waitForEvent(root, 'permission_decision');
    await waitForMarker(`cfh-tools-${runIdOf(runDir)}`, late.marker);
    const at = Date.now();
    child.kill('SIGINT');
    expect((await child).exitCode).toBe(130);
    const events = await readEvents(runDir);
    const stop = expectStopBeforeResult(events, 'call-0001', 'cancelled', 'tool_call_aborted');
    const finished = events.find((e) => e.type === 'run_finished');
    expect(stop.seq).toBeLessThan(finished?.seq ?? -1);
    expect(await containersOfRun(runIdOf(runDir))).toEqual([]);
    expect(await landedAfterDelay(repo, late, at)).toEqual([]);
    await expectAudited(runDir);
  });
});

let runsc: boolean | undefined;
async function runscRegistered(): Promise<boolean> {
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  runsc ??= Object.keys(info.Runtimes ?? {}).includes('runsc');
  return runsc;
}

describe.each(['runc', 'runsc'])('class 7 under %s: a timed-out call stops its work', (runtime) => {
  it("--tool-timeout kills the exec call's processes, a setsid daemon included", async (ctx) => {
    if (runtime === 'runsc' && !(await runscRegistered())) ctx.skip();
    const repo = await scratch.sampleRepo();
    const root = scratch.path(`art-timeout-${runtime}`);
    const late = lateWrites();
    // Two short calls after the one that times out keep the run (and its per-run container)
    // going past the delay; the last lists the arguments of the container's processes.
    const list = 'sleep 1; cat /proc/[0-9]*/cmdline | tr "\\0" "\\n"';
    const turns = await script(`timeout-${runtime}.json`, [
      { tool_calls: [exec(late.argv)] },
      { tool_calls: [exec(['sleep', '1'])] },
      { tool_calls: [exec(['sh', '-c', list])] },
      { text: 'done' },
    ]);
    const at = Date.now();
    const r = await cfh(
      agentRunArgs(
        { workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script: turns },
        [
          ...['--tool-timeout', '2', '--max-retries-per-tool-call', '0'],
          ...(runtime === 'runsc' ? ['--runtime', 'runsc'] : []),
        ],
      ),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const runDir = await onlyRunDir(root);
    const results = await toolResults(runDir);
    expect(results.map((x) => x.observation.status)).toEqual(['timeout', 'success', 'success']);
    const events = await readEvents(runDir);
    expectStopBeforeResult(events, 'call-0001', 'timeout', 'tool_executed');
    // Seconds after the timeout, past the delay, the container held nothing of the call.
    const listed = await readFile(path.join(runDir, 'outputs', 'call-0003.stdout'), 'utf8');
    expect(listed).toMatch(/^infinity$/m);
    expect(listed).not.toContain(late.marker);
    expect(Date.now() - at).toBeGreaterThan(DELAY_S * 1000);
    expect(await landedAfterDelay(repo, late, at)).toEqual([]);
    await expectAudited(runDir);
  });
});
