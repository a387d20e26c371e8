// `cfh audit` of a parent run with a child run (AH-DEL-3/5): the honest tree passes every
// check; the child's directory is accounted for by the child_started naming it (a planted
// one is not); `delegate` is on the surface only of a profile with children; and
// children.tree fails, naming the child, when the parent's child_finished records another
// final hash (re-sealed, so nothing else breaks) or the child's own chain was edited.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { copyRun, eventOf, forge } from './audit-forge.js';
import { agentRunArgs, cfh, onlyRunDir, readEvents, useScratch } from './helpers.js';

const scratch = useScratch('audit-children');

const PROFILE = `extends: default
name: parent
tools: [read_file, list_dir]
budgets: {maxModelTurns: 10, maxParallelChildren: 2}
children:
  reviewer:
    description: reads the workspace
    tools: [read_file, list_dir]
    workspace: {mode: ro}
    budgets: {maxModelTurns: 3, maxToolCalls: 4}
`;

const SCRIPT = `turns:
  - tool_calls: [{name: delegate, input: {profile: reviewer, task: "review"}}]
  - text: parent done
children:
  reviewer:
    turns:
      - tool_calls: [{name: list_dir, input: {path: .}}]
      - text: fine
`;

interface AuditJson {
  ok: boolean;
  checks: { id: string; verdict: string; detail: string; where: string[] }[];
}

async function audit(dir: string): Promise<AuditJson> {
  const r = await cfh(['audit', '--json', dir]);
  return JSON.parse(r.stdout) as AuditJson;
}

const failing = (a: AuditJson) => a.checks.filter((c) => c.verdict === 'fail').map((c) => c.id);
const check = (a: AuditJson, id: string) => a.checks.find((c) => c.id === id);

let run = '';
let childId = '';

describe('cfh audit of a run with a child run', () => {
  beforeAll(async () => {
    const root = scratch.path('art');
    const result = await cfh(
      agentRunArgs({
        workspace: await scratch.sampleRepo(),
        artifactRoot: root,
        profile: await scratch.file('parent.yaml', PROFILE),
        script: await scratch.file('script.yaml', SCRIPT),
      }),
    );
    expect(result.exitCode, result.stderr).toBe(0);
    run = await onlyRunDir(root);
    const finished = (await readEvents(run)).filter((e) => e.type === 'child_finished');
    expect(finished).toHaveLength(1);
    childId = (finished[0]?.data as { childId: string }).childId;
  }, 120_000);

  it('passes every check of the honest tree, children.tree among them', async () => {
    const a = await audit(run);
    expect(failing(a)).toEqual([]);
    expect(a.ok).toBe(true);
    for (const id of ['children.tree', 'integrity.unaccounted', 'tools.surface'])
      expect(check(a, id)?.verdict, id).toBe('pass');
  });

  it('fails children.tree, naming the child, when child_finished records another final hash', async () => {
    const dir = await copyRun(run, scratch.path('forged'));
    await forge(dir, (f) => {
      eventOf(f, 'child_finished').data.finalHash = 'f'.repeat(64);
    });
    const a = await audit(dir);
    expect(failing(a)).toEqual(['children.tree']);
    expect(check(a, 'children.tree')?.where.join('\n')).toMatch(
      new RegExp(`child ${childId}: its chain ends on another hash`),
    );
  });

  it("fails children.tree, naming the child, when the child's own chain was edited", async () => {
    const dir = await copyRun(run, scratch.path('tampered'));
    const log = path.join(dir, 'children', childId, 'events.jsonl');
    const lines = (await readFile(log, 'utf8')).trimEnd().split('\n');
    const last = JSON.parse(lines.at(-1) ?? '{}') as { data: Record<string, unknown> };
    last.data.terminalReason = 'forged';
    lines[lines.length - 1] = JSON.stringify(last);
    await writeFile(log, `${lines.join('\n')}\n`);
    const a = await audit(dir);
    expect(failing(a)).toEqual(['children.tree']);
    const where = check(a, 'children.tree')?.where.join('\n') ?? '';
    expect(where).toMatch(new RegExp(`child ${childId}: its chain does not verify`));
    expect(where).toMatch(new RegExp(`child ${childId}: its own audit fails .*integrity.chain`));
  });

  it('reports a child directory no child_started names as unaccounted', async () => {
    const dir = await copyRun(run, scratch.path('planted'));
    const planted = path.join(dir, 'children', '20200101T000000Z-0badf00d');
    await mkdir(planted, { recursive: true });
    await writeFile(path.join(planted, 'events.jsonl'), '{}\n');
    const a = await audit(dir);
    expect(failing(a)).toEqual(['integrity.unaccounted']);
    expect(check(a, 'integrity.unaccounted')?.where).toEqual([
      'children/20200101T000000Z-0badf00d/events.jsonl: in the directory, but no record accounts for it',
    ]);
  });

  it('fails tools.surface when delegate is on the surface of a profile without children', async () => {
    const dir = await copyRun(run, scratch.path('no-children'));
    await forge(dir, (f) => {
      delete f.snapshot.profile.resolved.children;
    });
    const a = await audit(dir);
    expect(failing(a)).toContain('tools.surface');
    expect(check(a, 'tools.surface')?.where).toContain(
      "snapshot.json tools: delegate is not in the profile's allowlist",
    );
  });
});
