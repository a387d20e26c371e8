// `--events jsonl` through the real CLI and engine: stdout is the run's event records as
// they are appended, the same bytes as events.jsonl, one per line, like
// `--output-format stream-json` or `exec --json`. The class: a consumer that cannot follow a
// run while it happens, or that gets records which differ from the evidence. The command's
// own output then goes only to outputs/, the agent's answer only to report.json; the
// summary line stays on stderr. With --json (both are stdout) it is refused.
import { describe, expect, it } from 'vitest';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { agentRunArgs, cfh, onlyRunDir, readJson, startCfh, useScratch } from './helpers.js';

const scratch = useScratch('run-events');

describe('--events jsonl', () => {
  it('streams each record as it is appended: the consumer sees the start before the run can end', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-live');
    const go = path.join(repo, 'go');
    // The command waits for a file only the test creates, and the test creates it only
    // once it has read container_started from cfh's stdout: a stream written at the end
    // (or buffered) never lets the run finish within the timeout.
    const child = startCfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--events',
      'jsonl',
      '--timeout',
      '60',
      '--',
      'sh',
      '-c',
      'while [ ! -e /workspace/go ]; do sleep 0.1; done; echo command-output',
    ]);
    let seen = '';
    const started = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString('utf8');
        if (seen.includes('"type":"container_started"')) resolve();
      });
    });
    const early = await Promise.race([started.then(() => 'started'), child.then(() => 'ended')]);
    expect(early).toBe('started');
    // Every line so far is a complete record; the run has not finished.
    expect(seen).not.toContain('"type":"run_finished"');
    await writeFile(go, '');
    const r = await child;
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const file = await readFile(path.join(dir, 'events.jsonl'), 'utf8');
    // The same bytes as events.jsonl, every record of the run, one per line.
    expect(r.stdout).toBe(file);
    expect(r.stdout.endsWith('"}\n') || r.stdout.endsWith('}\n')).toBe(true);
    for (const line of r.stdout.trimEnd().split('\n')) {
      expect(() => {
        JSON.parse(line);
      }).not.toThrow();
    }
    // The command's own bytes went to the evidence only; the summary line to stderr.
    expect(r.stdout).not.toContain('command-output');
    expect(await readFile(path.join(dir, 'outputs', 'stdout'), 'utf8')).toBe('command-output\n');
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^cfh: run \S+ completed \(exit 0\)/);
  });

  it('an agent run: the stream is events.jsonl, the answer stays out of it (report.json has it)', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-agent');
    const script = await scratch.file(
      'agent.yaml',
      'turns:\n  - tool_calls:\n      - { name: list_dir, input: { path: . } }\n  - text: "the answer"\n',
    );
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile: 'untrusted-repo', script }, [
        '--events',
        'jsonl',
      ]),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    expect(r.stdout).toBe(await readFile(path.join(dir, 'events.jsonl'), 'utf8'));
    expect(r.stdout).not.toContain('the answer');
    expect(await readJson(path.join(dir, 'report.json'))).toMatchObject({
      finalAnswer: 'the answer',
    });
  });

  it('a failing command still streams every record, the terminal one last', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-fail');
    const r = await cfh([
      'sandbox',
      'run',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--events',
      'jsonl',
      '--timeout',
      '1',
      '--',
      'sleep',
      '30',
    ]);
    expect(r.exitCode).toBe(124);
    const dir = await onlyRunDir(root);
    expect(r.stdout).toBe(await readFile(path.join(dir, 'events.jsonl'), 'utf8'));
    const last = JSON.parse(r.stdout.trimEnd().split('\n').at(-1) ?? '{}') as { type?: string };
    expect(last.type).toBe('run_finished');
  });

  it('with --json, or a format other than jsonl, it is refused before anything exists', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-refused');
    const base = ['sandbox', 'run', '--workspace', repo, '--artifact-root', root];
    const both = await cfh([...base, '--events', 'jsonl', '--json', '--', 'true']);
    expect(both.exitCode).toBe(125);
    // --json asks for the refusal as JSON (on stdout); it says why all the same.
    expect(JSON.parse(both.stdout)).toMatchObject({
      status: 'failed',
      error: { code: 'events_and_json', message: expect.stringContaining('not with --json') },
    });
    const other = await cfh([...base, '--events', 'json', '--', 'true']);
    expect(other.exitCode).toBe(125);
    expect(other.stderr).toContain('jsonl');
    await expect(readdir(root)).rejects.toThrow();
  });
});
