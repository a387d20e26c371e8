// An agent run in workspace mode draft (governance extension, "Draft vs commit policy"):
// the model's write_file, edit_file and exec calls change the run's copy, never the host;
// the patch carries all three, and `cfh runs apply` commits them. The scripted gateway
// stands in for the model; the tool containers are real.
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { treeState } from '../fixtures/tree-state.js';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  useScratch,
} from './helpers.js';

const scratch = useScratch('draft-agent');

describe('agent run in workspace mode draft', () => {
  it('writes with write_file, edit_file and exec into the draft, and the patch commits them', async () => {
    const repo = await scratch.sampleRepo();
    // As root, runs apply writes as the workspace's owner, who must reach it.
    await chmod(path.dirname(repo), 0o755);
    const calc = path.join(repo, 'calc.py');
    await writeFile(calc, (await readFile(calc, 'utf8')).replace('return a + b', 'return a - b'));
    const before = treeState(repo, { owners: true });
    const script = await scratch.file(
      'draft.yaml',
      [
        'model: scripted-test',
        'turns:',
        '  - tool_calls:',
        "      - { name: edit_file, input: { path: calc.py, old_string: 'return a - b', new_string: 'return a + b' } }",
        '  - tool_calls:',
        '      - { name: write_file, input: { path: NOTES.md, content: "fixed add\\n" } }',
        '  - tool_calls:',
        '      - { name: exec, input: { command: [sh, -c, "python3 -B -m unittest -q test_calc.CalcTest.test_add > result.txt 2>&1; echo $? >> result.txt"] } }',
        '  - tool_calls:',
        '      - { name: read_file, input: { path: calc.py } }',
        '  - text: fixed calc.add in the draft',
      ].join('\n'),
    );
    // The mode from a profile file, as an operator would set it.
    const profile = await scratch.file(
      'draft-profile.yaml',
      'extends: untrusted-repo\nname: drafting\nworkspace:\n  mode: draft\n',
    );
    const root = scratch.path('art');
    const r = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script, prompt: 'fix add' }, [
        '--json',
      ]),
    );
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', toolCalls: { total: 4 } });
    expect(treeState(repo, { owners: true })).toEqual(before);

    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    expect(
      events.filter((e) => e.type === 'tool_executed').map((e) => [e.data.tool, e.data.status]),
    ).toEqual([
      ['edit_file', 'success'],
      ['write_file', 'success'],
      ['exec', 'success'],
      ['read_file', 'success'],
    ]);
    // The model read back its own edit: the tools share the copy.
    const read = events.find((e) => e.type === 'tool_executed' && e.data.tool === 'read_file');
    expect(read).toBeDefined();
    const snapshot = await readJson<any>(path.join(dir, 'snapshot.json'));
    expect(snapshot.workspace).toMatchObject({ mode: 'draft', hostPath: repo });
    expect(existsSync(snapshot.workspace.draft.dir)).toBe(false);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    expect(
      (patch.changes as { path: string; kind: string }[]).map((c) => [c.path, c.kind]),
    ).toEqual([
      ['NOTES.md', 'added'],
      ['calc.py', 'modified'],
      ['result.txt', 'added'],
    ]);

    const diff = await cfh(['runs', 'diff', runIdOf(dir), '--artifact-root', root]);
    expect(diff.stdout).toContain('-    return a - b\n+    return a + b');

    const applied = await cfh(['runs', 'apply', runIdOf(dir), '--artifact-root', root, '--yes']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(await readFile(calc, 'utf8')).toContain('return a + b');
    expect(await readFile(path.join(repo, 'NOTES.md'), 'utf8')).toBe('fixed add\n');
    expect(await readFile(path.join(repo, 'result.txt'), 'utf8')).toMatch(/OK\n0\n$/);
  });

  it('a draft-only write lands only in the draft: another rw mount is read-only to the file tools', async () => {
    const repo = await scratch.sampleRepo();
    const data = scratch.path('host-data');
    await mkdir(data, { mode: 0o777 });
    await chmod(data, 0o777);
    const script = await scratch.file(
      'escape.yaml',
      [
        'model: scripted-test',
        'turns:',
        '  - tool_calls:',
        '      - { name: write_file, input: { path: /data/pwned.txt, content: "x" } }',
        '  - tool_calls:',
        '      - { name: write_file, input: { path: ../data/pwned2.txt, content: "x" } }',
        '  - tool_calls:',
        '      - { name: write_file, input: { path: in-draft.txt, content: "ok" } }',
        '  - text: done',
      ].join('\n'),
    );
    const root = scratch.path('art-escape');
    const r = await cfh(
      agentRunArgs(
        { workspace: repo, artifactRoot: root, script, prompt: 'write', profile: 'untrusted-repo' },
        ['--workspace-mode', 'draft', '--mount', `${data}:/data:rw`],
      ),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await readdir(data)).toEqual([]);
    const dir = await onlyRunDir(root);
    const events = await readEvents(dir);
    expect(
      events.filter((e) => e.type === 'permission_decision').map((e) => e.data.decision as string),
    ).toEqual(['run_as_draft_only', 'run_as_draft_only', 'run_as_draft_only']);
    expect(
      events.filter((e) => e.type === 'tool_executed').map((e) => e.data.status as string),
    ).toEqual(['error', 'error', 'success']);
    const patch = await readJson<any>(path.join(dir, 'patch', 'patch.json'));
    expect((patch.changes as { path: string }[]).map((c) => c.path)).toEqual(['in-draft.txt']);
  });
});
