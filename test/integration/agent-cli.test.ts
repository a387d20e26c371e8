// The agent run's command line and live record, through the real CLI: state.json says
// `running` while the run is live; flags meant for command runs (or agent runs only) are
// refused with 125 before anything is created; a profile naming an unknown tool is a
// configuration error, not an internal one.
import { describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  startCfh,
  waitForEvent,
  useScratch,
} from './helpers.js';

const scratch = useScratch('agent-cli');

/** A fresh copy of the sample repository, writable by the sandbox user. */
const sampleRepo = (): Promise<string> => scratch.sampleRepo();

const scratchFile = (name: string, body: string): Promise<string> => scratch.file(name, body);

/** The artifact root exists only if something created it. */
async function expectNothingCreated(root: string): Promise<void> {
  await expect(readdir(root)).rejects.toThrow();
}

describe('agent run: the live record', () => {
  it('writes state.json `running` while the run is live, and runs list shows it', async () => {
    const repo = await sampleRepo();
    const script = await scratchFile(
      'slow.yaml',
      'turns:\n  - tool_calls:\n      - { name: exec, input: { command: [sleep, "60"] } }\n  - text: never\n',
    );
    const root = scratch.path('art-live');
    const child = startCfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script }),
    );
    let settled = false;
    try {
      const dir = await waitForEvent(root, 'tool_container_started');
      const state = await readJson<{
        runId: string;
        state: string;
        updatedAt: string;
        lastEvent: { seq: number; hash: string };
      }>(path.join(dir, 'state.json'));
      expect(state).toMatchObject({ runId: runIdOf(dir), state: 'running' });
      expect(Number.isNaN(Date.parse(state.updatedAt))).toBe(false);
      // It cites the run_created event, as the terminal state cites run_finished.
      const created = (await readEvents(dir)).find((e) => e.type === 'run_created') as
        (Record<string, unknown> & { seq: number }) | undefined;
      expect(state.lastEvent).toEqual({ seq: created?.seq, hash: created?.hash });

      const list = await cfh(['runs', 'list', '--artifact-root', root, '--json']);
      expect(list.exitCode, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual([
        expect.objectContaining({
          runId: runIdOf(dir),
          state: 'running',
          writer: 'alive',
          kind: 'agent',
        }),
      ]);
      const text = await cfh(['runs', 'list', '--artifact-root', root]);
      expect(text.stdout).toMatch(new RegExp(`^${runIdOf(dir)}\\s+running\\s`, 'm'));

      child.kill('SIGINT');
      const result = await child;
      settled = true;
      expect(result.exitCode).toBe(130);
      expect(await readJson(path.join(dir, 'state.json'))).toMatchObject({ state: 'cancelled' });
      expect(await containersOfRun(runIdOf(dir))).toEqual([]);
    } finally {
      // A failed assertion must not leave cfh (and its containers) behind: SIGINT cleans up.
      if (!settled) {
        child.kill('SIGINT');
        await child;
      }
    }
  });
});

describe('agent run: flags refused before anything is created', () => {
  it('refuses --timeout with --prompt, naming the agent-run flags to use', async () => {
    const repo = await sampleRepo();
    const root = scratch.path('art-timeout');
    const r = await cfh(agentRunArgs({ workspace: repo, artifactRoot: root }, ['--timeout', '5']));
    expect(r.exitCode).toBe(125);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^cfh: --timeout: /);
    expect(lines[0]).toContain('--max-wall-time-seconds');
    expect(lines[0]).toContain('--tool-timeout');
    await expectNothingCreated(root);

    const json = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root }, ['--timeout', '5', '--json']),
    );
    expect(json.exitCode).toBe(125);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'failed',
      error: { code: 'command_option_with_prompt', boundary: 'configuration' },
    });
    await expectNothingCreated(root);
  });

  it('refuses a wall-time budget longer than a timer can be armed for', async () => {
    const repo = await sampleRepo();
    const root = scratch.path('art-wall-time');
    // 10^11 s: AbortSignal.timeout refused it (RangeError) only after the run directory
    // existed. Bounded like limits.wallTimeSeconds, at 7 days.
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root }, [
        '--max-wall-time-seconds',
        '100000000000',
      ]),
    );
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^cfh: --max-wall-time-seconds: .*604800/),
    ]);
    await expectNothingCreated(root);
  });

  it('refuses --provider on a command run (no --prompt)', async () => {
    const repo = await sampleRepo();
    const root = scratch.path('art-provider');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--provider',
      'scripted',
      '--',
      'true',
    ]);
    expect(r.exitCode).toBe(125);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      'cfh: --provider: only for agent runs; give --prompt TEXT',
    ]);
    await expectNothingCreated(root);
  });
});

describe('agent run: a profile naming an unknown tool', () => {
  it('is a configuration error for sandbox run and profiles show --resolved', async () => {
    const repo = await sampleRepo();
    const profile = await scratchFile(
      'teleport-profile.yaml',
      'extends: default\ntools: [read_file, teleport]\n',
    );
    const root = scratch.path('art-teleport');
    const r = await cfh(agentRunArgs({ workspace: repo, artifactRoot: root, profile }));
    expect(r.exitCode).toBe(125);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toContain(`profile ${profile}: tools: 'teleport' is not a known tool`);
    expect(lines[0]).toContain('read_file');
    expect(r.stderr).not.toMatch(/\bat .*\.js:\d+/);
    expect(r.stderr).not.toContain('internal_error');
    await expectNothingCreated(root);

    const json = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile }, ['--json']),
    );
    expect(json.exitCode).toBe(125);
    expect(JSON.parse(json.stdout)).toMatchObject({
      error: { code: 'unknown_tool', boundary: 'configuration' },
    });
    // --json: the JSON error on stdout, and the same one line on stderr as without it.
    expect(json.stderr).toBe(r.stderr);

    // profiles show has no --json: the refusal is the one line on stderr (a usage error, 2).
    const show = await cfh(['profiles', 'show', profile, '--resolved', '--workspace', repo]);
    expect(show.exitCode).toBe(2);
    expect(show.stdout).toBe('');
    expect(show.stderr).toBe(r.stderr);
    await expectNothingCreated(root);
    // onlyRunDir would find nothing: no run was started.
    await expect(onlyRunDir(root)).rejects.toThrow();
  });
});
