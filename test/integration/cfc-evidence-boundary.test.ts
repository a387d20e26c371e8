// AH-CFC-17: CFC evidence is kept under a boundary at least as strict as the transcript and
// the raw tool artifacts it explains, proved on a real enforce-explicit run that reads a
// secret (a handle), reads the workspace and writes: every file of the artifact root that
// holds CFC evidence lies in the run's directory, grants nobody more than the transcript
// and the raw outputs do (mode bits, owner, group), and goes when the run is pruned, with
// the transcript, leaving nothing of it behind.
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, readEvents, useScratch } from './helpers.js';

const scratch = useScratch('cfc-evidence-boundary');

/** Every regular file below `dir`. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

/** Whether `a` lets anyone do what `b` does not: a permission bit, or another owner or group. */
async function looserThan(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  return (sa.mode & 0o7777 & ~(sb.mode & 0o7777)) !== 0 || sa.uid !== sb.uid || sa.gid !== sb.gid;
}

const CFC_EVIDENCE = /"cfc_(label|influence|flow|handle|endorsement)"|"prompt_captured"|capture-1/;

describe('CFC evidence under the boundary of what it explains (AH-CFC-17)', () => {
  it('in the run directory only, no looser than the transcript and raw outputs, pruned with them', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = scratch.path('secrets');
    await mkdir(secrets, { mode: 0o777 });
    await writeFile(path.join(secrets, 'x'), 'the secret\n', { mode: 0o644 });
    const profile = await scratch.file(
      'profile.yaml',
      [
        'extends: untrusted-repo',
        'name: cfc-boundary',
        'cfc: { mode: enforce-explicit }',
        'workspace: { mode: rw, label: { integrity: [repo] } }',
        'mounts:',
        `  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }`,
      ].join('\n'),
    );
    const script = await scratch.file(
      'script.yaml',
      [
        'turns:',
        '  - tool_calls:',
        '      - { name: read_file, input: { path: /secrets/x } }',
        '      - { name: read_file, input: { path: calc.py } }',
        '  - tool_calls:',
        '      - { name: write_file, input: { path: notes.txt, content: noted } }',
        '  - text: done',
      ].join('\n'),
    );
    const root = scratch.path('art');
    const r = await cfh(agentRunArgs({ workspace: repo, artifactRoot: root, profile, script }));
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const types = new Set((await readEvents(dir)).map((e) => e.type));
    for (const t of ['prompt_captured', 'cfc_label', 'cfc_influence', 'cfc_flow', 'cfc_handle'])
      expect(types.has(t), t).toBe(true);

    // What it explains: the transcript and the raw tool outputs (the secret is there, raw).
    const transcript = path.join(dir, 'transcript.jsonl');
    const outputs = (await filesUnder(path.join(dir, 'outputs'))).filter((f) =>
      /call-\d+\.stdout$/.test(f),
    );
    expect(outputs.length).toBeGreaterThan(0);
    const explained = [transcript, ...outputs];
    expect((await Promise.all(outputs.map((f) => readFile(f, 'utf8')))).join('')).toContain(
      'the secret',
    );

    const holding: string[] = [];
    for (const f of await filesUnder(root))
      if (CFC_EVIDENCE.test(await readFile(f, 'utf8'))) holding.push(f);
    expect(holding).toContain(path.join(dir, 'events.jsonl'));
    for (const f of holding) {
      expect(f.startsWith(`${dir}/`), `${f} outside the run directory`).toBe(true);
      for (const e of explained)
        expect(await looserThan(f, e), `${f} is looser than ${path.basename(e)}`).toBe(false);
      // Every directory between it and the run directory, too.
      for (let d = path.dirname(f); d.startsWith(dir); d = path.dirname(d))
        expect(await looserThan(d, dir), d).toBe(false);
    }

    // Retention: pruning the run takes the CFC evidence with the transcript; nothing stays.
    const prune = await cfh(['runs', 'prune', '--older-than', '0s', '--artifact-root', root]);
    expect(prune.exitCode, prune.stderr).toBe(0);
    expect(await readdir(root)).toEqual([]);
  });
});
