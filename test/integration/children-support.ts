// What the delegation tests share (children, adv-children, adv-children-2): scripted calls,
// a parent run over a fresh sample repository, and the tree of runs it left, checked gone
// from the engine.
import { chmod, readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import {
  agentRunArgs,
  cfh,
  containersOfRun,
  onlyRunDir,
  readEvents,
  readJson,
  runIdOf,
  type Event,
  type Scratch,
} from './helpers.js';

export const call = (name: string, input: unknown) => ({ name, input });
export const delegate = (profile: string, task: string) => call('delegate', { profile, task });
export const ofType = (events: Event[], type: string) => events.filter((e) => e.type === type);

/** The parent profile the tests extend: reads only. */
export const PARENT = { extends: 'default', name: 'parent', tools: ['read_file', 'list_dir'] };

export interface ParentRunOptions {
  readonly extra?: string[];
  /** A workspace the test made; a fresh sample repository otherwise. */
  readonly workspace?: string;
  readonly env?: Record<string, string>;
}

/** Files, repositories and parent runs in `scratch`, each under a name of its own. */
export function childRuns(scratch: Scratch) {
  let n = 0;
  const unique = (name: string): string => {
    n += 1;
    return `${String(n)}-${name}`;
  };
  const file = (name: string, body: unknown): Promise<string> =>
    scratch.file(unique(name), JSON.stringify(body));
  /** The sample repository, its directory open to the owner a draft child copies it as. */
  const repo = async (): Promise<string> => {
    const r = await scratch.sampleRepo();
    await chmod(path.dirname(r), 0o755);
    return r;
  };
  /** The parent's run and its evidence. */
  const parentRun = async (profile: unknown, script: unknown, o: ParentRunOptions = {}) => {
    const ws = o.workspace ?? (await repo());
    const root = scratch.path(unique('art'));
    const result = await cfh(
      agentRunArgs(
        {
          workspace: ws,
          artifactRoot: root,
          profile: await file('parent.yaml', profile),
          script: await file('script.yaml', script),
        },
        o.extra ?? [],
      ),
      { env: o.env ?? {} },
    );
    if (!existsSync(root)) throw new Error(`the run did not start: ${result.stderr}`);
    const dir = await onlyRunDir(root);
    return { result, dir, repo: ws, root, events: await readEvents(dir) };
  };
  return { unique, file, repo, parentRun, path: (name: string) => scratch.path(unique(name)) };
}

/** Every run id below `dir` (the run, its children, theirs), from the directories. */
export async function treeIds(dir: string): Promise<{ id: string; dir: string }[]> {
  const out = [{ id: runIdOf(dir), dir }];
  const kids = await readdir(path.join(dir, 'children')).catch(() => [] as string[]);
  for (const k of kids) out.push(...(await treeIds(path.join(dir, 'children', k))));
  return out;
}

/** Nothing of the tree is left on the engine, and every run of it is terminal. */
export async function treeIsGone(dir: string): Promise<void> {
  const ids = await treeIds(dir);
  // Also every child id the chains name (a child whose directory is missing included).
  const named = new Set(ids.map((x) => x.id));
  for (const { dir: d } of ids)
    for (const e of ofType(await readEvents(d), 'child_started'))
      named.add((e.data as { childId: string }).childId);
  for (const id of named) {
    const left = await containersOfRun(id);
    expect(left, `${id}: ${JSON.stringify(left)}`).toEqual([]);
  }
  for (const { id, dir: d } of ids) {
    const state = await readJson<{ state: string }>(path.join(d, 'state.json'));
    expect(['completed', 'failed', 'cancelled'], `${id} ${state.state}`).toContain(state.state);
  }
}
