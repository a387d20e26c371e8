// What earlier runs wrote into a host tree stays in its label (cfc/written-labels.ts,
// AH-CFC-2/7): a deploy profile cleared to render a secret into the workspace leaves it
// there, and the next run, under a profile whose workspace label says nothing of it, reads
// it under the secret's label (a handle), not the profile's. The record is the tree's, by
// identity: an agent run's write, a command run's copy, a draft run's write and a mount of a
// directory inside the tree all count. `cfh labels forget` is the operator's word undoing it.
import { chmod, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cfh, useScratch } from './helpers.js';
import { profile, script, scriptedRun, secretDir, transcriptText } from './adv-round3-support.js';

const scratch = useScratch('cfc-written');
const TOKEN = 'WRITTEN-TOKEN-9f3Kq2Lx';

interface Snap {
  cfc: { mounts: { target: string; labelSource?: string; writtenBy?: string[] }[] };
}

async function snapshotOf(dir: string): Promise<Snap> {
  return JSON.parse(await readFile(path.join(dir, 'snapshot.json'), 'utf8')) as Snap;
}

/** The state directory of one scenario: the records are its own. */
function stateEnv(name: string): Record<string, string> {
  return { CFH_STATE_DIR: scratch.path(`state-${name}`) };
}

const everyday = (workspace: Record<string, unknown> = {}) =>
  profile(scratch, {
    tools: ['read_file', 'list_dir'],
    workspace: { mode: 'rw', label: { integrity: ['repo'] }, ...workspace },
    cfc: { mode: 'enforce-explicit', modelClearance: [] },
  });

/** The everyday run: reads `file` of the workspace; returns what the model was sent. */
async function readBack(
  env: Record<string, string>,
  workspace: string,
  file: string,
): Promise<{ transcript: string; snap: Snap; code: number; stderr: string }> {
  const { r, dir } = await scriptedRun(scratch, {
    profile: await everyday(),
    script: await script(scratch, [[{ name: 'read_file', input: { path: file } }]]),
    workspace,
    env,
  });
  return {
    transcript: await transcriptText(dir),
    snap: await snapshotOf(dir),
    code: r.exitCode,
    stderr: r.stderr,
  };
}

describe('cfc: what a run wrote into a tree stays in its label', () => {
  it('a deploy run renders the secret into .env; the everyday run reads it as a handle, until the operator forgets it', async () => {
    const env = stateEnv('agent');
    const secrets = await secretDir(scratch, { token: TOKEN });
    const workspace = await scratch.sampleRepo();
    const deploy = await profile(scratch, {
      tools: ['read_file', 'write_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const s = await script(scratch, [
      [{ name: 'read_file', input: { path: '/secrets/token' } }],
      [{ name: 'write_file', input: { path: '.env', content: 'DEPLOY_TOKEN={{handle:1}}\n' } }],
    ]);
    const first = await scriptedRun(scratch, { profile: deploy, script: s, workspace, env });
    expect(first.r.exitCode, first.r.stderr).toBe(0);
    expect(await readFile(path.join(workspace, '.env'), 'utf8')).toContain(TOKEN);
    const events = await readFile(path.join(first.dir, 'events.jsonl'), 'utf8');
    expect(events).toMatch(/"type":"cfc_written"[^\n]*"target":"\/workspace"[^\n]*"secret"/);
    const firstId = path.basename(first.dir);

    const later = await readBack(env, workspace, '.env');
    expect(later.code, later.stderr).toBe(0);
    expect(later.transcript).not.toContain(TOKEN);
    expect(later.transcript).toMatch(/cfh-val:[a-z2-7]{20}/);
    const ws = later.snap.cfc.mounts.find((m) => m.target === '/workspace');
    expect(ws?.labelSource).toBe('written');
    expect(ws?.writtenBy).toEqual([firstId]);

    const listed = await cfh(['labels', '--json'], { env });
    expect(listed.exitCode, listed.stderr).toBe(0);
    const trees = (JSON.parse(listed.stdout) as { trees: { path: string; label: unknown }[] })
      .trees;
    expect(trees.map((t) => t.path)).toEqual([workspace]);
    const forgot = await cfh(['labels', 'forget', workspace], { env });
    expect(forgot.exitCode, forgot.stderr).toBe(0);
    expect(forgot.stdout).toContain(`forgot what 1 run(s) wrote into ${workspace}`);
    // The operator's word: the configured label again, and the model is shown the file.
    const after = await readBack(env, workspace, '.env');
    expect(after.transcript).toContain(TOKEN);
    expect(after.snap.cfc.mounts.find((m) => m.target === '/workspace')?.labelSource).toBe(
      'profile',
    );
  });

  it('a command run that copies a mounted secret into the workspace raises it; a mount of a directory inside it too', async () => {
    const env = stateEnv('command');
    const secrets = await secretDir(scratch, { token: TOKEN });
    const workspace = await scratch.sampleRepo();
    const p = await profile(scratch, {
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const r = await cfh(
      [
        'sandbox',
        'run',
        '--profile',
        p,
        '--workspace',
        workspace,
        '--artifact-root',
        scratch.path('art-command'),
        '--',
        'sh',
        '-c',
        'mkdir -p /workspace/out && cp /secrets/token /workspace/out/token',
      ],
      { env },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const later = await readBack(env, workspace, 'out/token');
    expect(later.code, later.stderr).toBe(0);
    expect(later.transcript).not.toContain(TOKEN);
    // The directory it wrote into, mounted as a workspace of its own: inside the tree.
    const inner = await readBack(env, path.join(workspace, 'out'), 'token');
    expect(inner.code, inner.stderr).toBe(0);
    expect(inner.transcript).not.toContain(TOKEN);
    expect(inner.snap.cfc.mounts.find((m) => m.target === '/workspace')?.labelSource).toBe(
      'written',
    );
  });

  it("a draft run's write counts for the host workspace it was copied from", async () => {
    const env = stateEnv('draft');
    const secrets = await secretDir(scratch, { token: TOKEN });
    const workspace = await scratch.sampleRepo();
    // As root, the copy and the apply act as the workspace's owner, who must reach it.
    await chmod(path.dirname(workspace), 0o755);
    const drafting = await profile(scratch, {
      tools: ['read_file', 'write_file'],
      workspace: { mode: 'draft', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const s = await script(scratch, [
      [{ name: 'read_file', input: { path: '/secrets/token' } }],
      [{ name: 'write_file', input: { path: 'token.txt', content: '{{handle:1}}' } }],
    ]);
    const run = await scriptedRun(scratch, { profile: drafting, script: s, workspace, env });
    expect(run.r.exitCode, run.r.stderr).toBe(0);
    const applied = await cfh(
      ['runs', 'apply', path.basename(run.dir), '--yes', '--artifact-root', run.artifactRoot],
      { env },
    );
    expect(applied.exitCode, applied.stderr).toBe(0);
    const later = await readBack(env, workspace, 'token.txt');
    expect(later.code, later.stderr).toBe(0);
    expect(later.transcript).not.toContain(TOKEN);
  });
});
