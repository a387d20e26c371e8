// Real runs for the audit's re-derivations (integration/audit-derive.test.ts), made through the
// built CLI against the real engine with the scripted model: an enforce-explicit agent run
// whose model is shown a secret file, holds a vault file as a handle, writes where the flow
// allows it, and proposes three writes the flow refuses (nobody to ask: left unapproved); the
// same run resumed; a session of one turn; a parent run with a child under a ceiling.
import { chown, mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, readEvents, type Scratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

/** A priced model name, so each attempt's estimate is computed from its counters. */
export const PRICED_MODEL = 'claude-sonnet-4-6';

const SCRIPT = `model: ${PRICED_MODEL}
turns:
  - text: Looking.
    tool_calls:
      - { name: read_file, input: { path: /vault/key } }
      - { name: read_file, input: { path: /secrets/plan.txt } }
      - { name: write_file, input: { path: /out/early.txt, content: early } }
      - { name: exec, input: { command: [ls] } }
    usage: { input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 400 }
  - text: Writing.
    tool_calls:
      - { name: write_file, input: { path: notes.txt, content: 'the plan' } }
      - { name: write_file, input: { path: /out/late.txt, content: '{{handle:1}}' } }
      - { name: exec, input: { command: ['true'] } }
    usage: { input_tokens: 1500, output_tokens: 60, cache_read_input_tokens: 400, cache_creation_input_tokens: 100 }
  - text: Done.
    usage: { input_tokens: 1700, output_tokens: 10 }
`;

export interface DeriveFixtures {
  /** The enforce-explicit run: call-0005 (notes.txt) is the flow refused for [secret]. */
  readonly cfc: string;
  /** `cfc` resumed: its context starts with the secret the old one ended with. */
  readonly resumed: string;
  /** A session's run (`cfh serve --stdio`), one turn. */
  readonly session: string;
  /** A parent run whose child `reviewer` runs under the ceiling [] (nothing confidential). */
  readonly parent: string;
  readonly childId: string;
}

async function dirWith(scratch: Scratch, name: string, files: Record<string, string>) {
  const dir = scratch.path(name);
  await mkdir(dir, { mode: 0o777 });
  for (const [f, body] of Object.entries(files))
    await writeFile(path.join(dir, f), body, { mode: 0o644 });
  return dir;
}

async function cfcRun(scratch: Scratch, root: string): Promise<string> {
  const repo = await scratch.sampleRepo();
  const secrets = await dirWith(scratch, 'secrets', { 'plan.txt': 'the plan\n' });
  const vault = await dirWith(scratch, 'vault', { key: 'k3y\n' });
  const out = await dirWith(scratch, 'out', {});
  // The sandbox runs as the workspace's owner: the rw mount is theirs too.
  const owner = await stat(repo);
  await chown(out, owner.uid, owner.gid);
  const profile = await scratch.file(
    'cfc.yaml',
    [
      'extends: untrusted-repo',
      'name: cfc-derive',
      'cfc: { mode: enforce-explicit, modelClearance: [secret] }',
      'workspace: { mode: rw, label: { integrity: [repo:untrusted] } }',
      'mounts:',
      `  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }`,
      `  - { source: ${vault}, target: /vault, label: { confidentiality: [vault] } }`,
      `  - { source: ${out}, target: /out, mode: rw, label: { integrity: [] }, clearance: [secret] }`,
      '',
    ].join('\n'),
  );
  const r = await cfh([
    ...agentRunArgs({
      workspace: repo,
      artifactRoot: root,
      profile,
      script: await scratch.file('cfc-script.yaml', SCRIPT),
      prompt: 'write the plan down',
    }),
    '--non-interactive',
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return onlyRunDir(root);
}

async function resumedRun(scratch: Scratch, root: string, old: string): Promise<string> {
  const r = await cfh([
    'sandbox',
    'resume',
    path.basename(old),
    '--artifact-root',
    root,
    '--script',
    await scratch.file('answer.yaml', 'turns:\n  - text: resumed and done\n'),
    '--json',
  ]);
  expect(r.exitCode, r.stderr).toBe(0);
  return path.join(root, (JSON.parse(r.stdout) as { runId: string }).runId);
}

async function sessionRun(scratch: Scratch): Promise<string> {
  const root = scratch.path('art-session');
  const client = new ServeClient([
    '--profile',
    'untrusted-repo',
    '--workspace',
    await scratch.sampleRepo(),
    '--artifact-root',
    root,
    '--script',
    await scratch.file('talk.yaml', 'turns:\n  - text: one\n'),
  ]);
  const opened = await client.call('session/open', {});
  expect(await client.turn(String(opened.sessionId), 'say one')).toMatchObject({
    status: 'answered',
  });
  expect(await client.end()).toBe(0);
  return path.join(root, String(opened.runId));
}

const PARENT = `extends: default
name: parent
tools: [read_file, list_dir]
cfc: { mode: enforce-explicit }
workspace: { mode: ro, label: { integrity: [repo:untrusted] } }
budgets: {maxModelTurns: 10, maxParallelChildren: 2}
children:
  reviewer:
    description: reads the workspace
    tools: [read_file, list_dir]
    workspace: {mode: ro, label: { integrity: [repo:untrusted] } }
    ceiling: { confidentiality: [] }
    budgets: {maxModelTurns: 3, maxToolCalls: 4}
`;

const DELEGATING = `turns:
  - tool_calls: [{name: delegate, input: {profile: reviewer, task: "review"}}]
  - text: parent done
children:
  reviewer:
    turns:
      - tool_calls: [{name: list_dir, input: {path: .}}]
      - text: fine
`;

async function parentRun(scratch: Scratch): Promise<{ parent: string; childId: string }> {
  const root = scratch.path('art-parent');
  const r = await cfh(
    agentRunArgs({
      workspace: await scratch.sampleRepo(),
      artifactRoot: root,
      profile: await scratch.file('parent.yaml', PARENT),
      script: await scratch.file('delegating.yaml', DELEGATING),
    }),
  );
  expect(r.exitCode, r.stderr).toBe(0);
  const parent = await onlyRunDir(root);
  const finished = (await readEvents(parent)).find((e) => e.type === 'child_finished');
  return { parent, childId: String((finished?.data as { childId?: string }).childId) };
}

export async function makeDeriveFixtures(scratch: Scratch): Promise<DeriveFixtures> {
  const root = scratch.path('art-cfc');
  const cfc = await cfcRun(scratch, root);
  return {
    cfc,
    resumed: await resumedRun(scratch, root, cfc),
    session: await sessionRun(scratch),
    ...(await parentRun(scratch)),
  };
}
