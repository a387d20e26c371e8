// Round 7 (red team a20): a child's host tool, cleared for [secret], saves the secret into a
// store its env names; the parent mounts that store's directory read-only under a low label.
// The parent's mount label counted only its own host tools' stores, a child's writes were
// exempt from its ancestors' leases, and after `delegate` the parent's read_file showed the
// secret to its model. Classes: the store trees of every host tool the run or any descendant
// child can call count for the run's mounts at planning (engine/cfc/host-tool-tree.ts); a
// descendant's write into a tree an ancestor reads under a lower label is refused by the
// ancestor's lease like any other run's (engine/cfc/written-leases.ts). AH-CFC-2, AH-CFC-12.
import { chmod, link, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import {
  dirIn,
  mountLabel,
  plainDir,
  runIn,
  snapshotOf,
  stateEnv,
  transcriptText,
  yamlFile,
} from './adv-round6-support.js';

const scratch = useScratch('adv7-child-store');
const TOKEN = 'S3CRET-RT7-A20-cc77';
let tools = '';
let ws = '';
let secrets = '';

beforeAll(async () => {
  tools = await plainDir(scratch, 'tools');
  await chmod(tools, 0o755);
  await writeFile(
    path.join(tools, 'save.py'),
    "import os, sys\nopen(os.environ['STORE'], 'a').write(sys.argv[1] + '\\n'); print('saved')\n",
  );
  ws = await dirIn(scratch, 'ws');
  await writeFile(path.join(ws, 'README'), 'hi\n');
  secrets = await dirIn(scratch, 'secrets');
  await writeFile(path.join(secrets, 'token'), TOKEN);
  await chmod(path.join(secrets, 'token'), 0o644);
});

const MODE = 'enforce-strict';

/** A store directory only root may change (a host tool's store may not be the sandbox's). */
async function storeDir(name: string): Promise<string> {
  const d = await plainDir(scratch, name);
  await chmod(d, 0o755);
  await writeFile(path.join(d, 'notes.txt'), '');
  await chmod(path.join(d, 'notes.txt'), 0o644);
  return d;
}

/** Every events file under a run directory (its children's too), as one text. */
async function childEvents(runDir: string): Promise<string> {
  const out: string[] = [];
  for (const f of await readdir(runDir, { recursive: true }))
    if (/events\.jsonl$|transcript/.test(f)) out.push(await readFile(path.join(runDir, f), 'utf8'));
  return out.join('\n');
}
const RO_USER = { mode: 'ro', label: { integrity: ['user'] } };

/** A parent mounting `mounted` at /store, its child `vault` saving into `storeFile`. */
async function parentProfile(mounted: string, storeFile: string): Promise<string> {
  return yamlFile(scratch, 'parent', {
    extends: 'default',
    name: 'rt7-a20',
    tools: ['read_file'],
    cfc: { mode: MODE, modelClearance: [] },
    workspace: RO_USER,
    mounts: [{ source: mounted, target: '/store', ...RO_USER }],
    children: {
      vault: {
        description: 'files tokens',
        tools: ['read_file'],
        workspace: RO_USER,
        mounts: [
          {
            source: secrets,
            target: '/secrets',
            mode: 'ro',
            label: { confidentiality: ['secret'] },
          },
        ],
        cfc: { mode: MODE, modelClearance: [] },
        hostTools: [
          {
            name: 'save',
            kind: 'exec',
            argv: ['python3', path.join(tools, 'save.py'), '{v}'],
            cwd: tools,
            env: { STORE: { value: storeFile } },
            input: { v: { type: 'string', maxLength: 200, pattern: '[A-Za-z0-9:._-]+' } },
            riskClass: 'write_local',
            sideEffectClass: 'local_artifact',
            resourceScope: 'project',
            resultLabel: { integrity: ['ops'] },
            clearance: ['secret'],
          },
        ],
        policy: [{ id: 'save', match: { tool: 'host__save' }, decision: 'allow', reason: 'notes' }],
        budgets: { maxModelTurns: 4 },
      },
    },
  });
}

async function delegateThenRead(profile: string, readPath: string, env: Record<string, string>) {
  const script = await yamlFile(scratch, 'script', {
    model: 'rt7-a20',
    turns: [
      { tool_calls: [{ name: 'delegate', input: { profile: 'vault', task: 'file the token' } }] },
      { tool_calls: [{ name: 'read_file', input: { path: readPath } }] },
      { text: 'done' },
    ],
    children: {
      vault: {
        turns: [
          { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] },
          { tool_calls: [{ name: 'host__save', input: { v: '{{handle:1}}' } }] },
          { text: 'filed' },
        ],
      },
    },
  });
  const art = await plainDir(scratch, 'art');
  const args = ['--profile', profile, '--workspace', ws, '--prompt', 'file the token'];
  return runIn(art, [...args, '--script', script, '--non-interactive'], env);
}

describe('round 7: a child host tool store under its parent mount', () => {
  it("class descendant stores count at planning: the parent's mount of a child's store carries its clearance, after delegate and in a later run", async () => {
    const env = await stateEnv(scratch, 'a20');
    const store = await storeDir('store');
    const notes = path.join(store, 'notes.txt');
    const { r, dir } = await delegateThenRead(
      await parentProfile(store, notes),
      '/store/notes.txt',
      env,
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await readFile(notes, 'utf8')).toContain(TOKEN);
    expect(await transcriptText(dir ?? '')).not.toContain(TOKEN);
    expect(mountLabel(await snapshotOf(dir ?? ''), '/store')).toContain('secret');

    // A later run of a profile with no host tool at all mounts the store at what was written.
    const later = await yamlFile(scratch, 'later', {
      extends: 'default',
      name: 'rt7-a20-later',
      tools: ['read_file'],
      cfc: { mode: MODE, modelClearance: [] },
      workspace: RO_USER,
      mounts: [{ source: store, target: '/store', ...RO_USER }],
    });
    const script = await yamlFile(scratch, 'later-script', {
      model: 'rt7-later',
      turns: [
        { tool_calls: [{ name: 'read_file', input: { path: '/store/notes.txt' } }] },
        { text: 'done' },
      ],
    });
    const art = await plainDir(scratch, 'art');
    const again = await runIn(
      art,
      [
        '--profile',
        later,
        '--workspace',
        ws,
        '--prompt',
        'read',
        '--script',
        script,
        '--non-interactive',
      ],
      env,
    );
    expect(again.r.exitCode, again.r.stderr).toBe(0);
    expect(await transcriptText(again.dir ?? '')).not.toContain(TOKEN);
    expect(mountLabel(await snapshotOf(again.dir ?? ''), '/store')).toContain('secret');
  });

  it("class descendant writes meet ancestors' leases: a child's save into a tree its parent reads lower (another name of the store) is refused", async () => {
    const env = await stateEnv(scratch, 'a20-lease');
    const store = await storeDir('store');
    const notes = path.join(store, 'notes.txt');
    // The parent mounts another name of the file (a hard link), which no configuration names.
    const other = await storeDir('other');
    await rm(path.join(other, 'notes.txt'));
    await link(notes, path.join(other, 'notes.txt'));
    const { r, dir } = await delegateThenRead(
      await parentProfile(other, notes),
      '/store/notes.txt',
      env,
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await transcriptText(dir ?? '')).not.toContain(TOKEN);
    expect(await readFile(notes, 'utf8'), r.stderr).not.toContain(TOKEN);
    // The child's call was answered as not run (its answer is as secret as the call): nothing
    // was recorded as written into the store, and the tool never started.
    const events = await childEvents(dir ?? '');
    expect(events).toMatch(
      /"type":"tool_executed","data":\{[^}]*"tool":"host__save","exitCode":null/,
    );
    expect(events).not.toMatch(/"type":"cfc_written"[^\n]*host__save/);
  });
});
