// After execution, through the real CLI, engine and Docker (design 3/4/8; AH-CFC-2/6/7/18):
// a file tool never crosses a mount boundary through a link (every mode: a containment
// rule), a secret-labelled read reaches a model not cleared for it only as a handle, a
// cleared one joins the influence of the next turn, and exec's observation carries what
// its container can read.
import { chown, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, readEvents, toolResults, useScratch } from './helpers.js';

const scratch = useScratch('cfc-observe');

async function dirWith(name: string, files: Record<string, string>): Promise<string> {
  const dir = scratch.path(name);
  await mkdir(dir, { mode: 0o777 });
  for (const [f, body] of Object.entries(files))
    await writeFile(path.join(dir, f), body, { mode: 0o644 });
  return dir;
}

async function script(name: string, calls: string[]): Promise<string> {
  const turns = calls.map((c) => `  - tool_calls:\n      - ${c}`);
  return scratch.file(`${name}-script.yaml`, ['turns:', ...turns, '  - text: done', ''].join('\n'));
}

describe('the mount boundary (design 8): links out of a mount are refused', () => {
  it('read_file, list_dir, grep, write_file, edit_file through a planted link fail; direct paths work', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = await dirWith('secrets-link', { x: 'the secret\n' });
    const out = await dirWith('out-link', {});
    // The sandbox runs as the workspace's owner (as root): the rw mount is theirs too.
    const owner = await stat(repo);
    await chown(out, owner.uid, owner.gid);
    // Planted by whoever wrote the repository: links from the workspace into other mounts.
    await symlink('/secrets/x', path.join(repo, 'leak'));
    await symlink('/secrets', path.join(repo, 'sdir'));
    await symlink('/out', path.join(repo, 'odir'));
    await symlink('calc.py', path.join(repo, 'same'));
    const profile = await scratch.file(
      'link.yaml',
      `extends: untrusted-repo\nname: link\nmounts:\n  - { source: ${secrets}, target: /secrets }\n  - { source: ${out}, target: /out, mode: rw }\n`,
    );
    const s = await script('link', [
      '{ name: read_file, input: { path: leak } }',
      '{ name: list_dir, input: { path: sdir } }',
      '{ name: grep, input: { pattern: secret, path: sdir } }',
      '{ name: grep, input: { pattern: secret, path: leak } }',
      '{ name: write_file, input: { path: odir/planted, content: x } }',
      '{ name: edit_file, input: { path: leak, old_string: the, new_string: a } }',
      '{ name: grep, input: { pattern: secret, path: . } }',
      '{ name: read_file, input: { path: /secrets/x } }',
      '{ name: read_file, input: { path: same } }',
    ]);
    const root = scratch.path('art-link');
    const run = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script: s }),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const results = (await toolResults(await onlyRunDir(root))).map((r) => r.observation);
    expect(results).toHaveLength(9);
    const refused = results.slice(0, 6);
    const names = ['leak', 'sdir', 'sdir', 'leak', 'odir/planted', 'leak'];
    for (const [i, o] of refused.entries()) {
      expect(o.status, JSON.stringify(o)).toBe('error');
      expect(o.summary).toBe(
        `mount_boundary: ${names[i]} leads out of the mount /workspace through a link`,
      );
    }
    // Nothing was written through the link, and the secret was never shown.
    await expect(readFile(path.join(out, 'planted'))).rejects.toThrow();
    expect(await readFile(path.join(secrets, 'x'), 'utf8')).toBe('the secret\n');
    expect(JSON.stringify(refused)).not.toContain('the secret');
    // grep -r does not follow a link below its start path.
    expect(results[6]).toMatchObject({ status: 'success' });
    expect(JSON.stringify(results[6])).not.toContain('the secret');
    // The same files by their own paths, and a link inside one mount, still work.
    expect(results[7]).toMatchObject({ status: 'success', items: ['the secret\n'] });
    expect(results[8]?.status).toBe('success');
    expect(results[8]?.items[0]).toContain('def add');
  });
});

interface Ev {
  type: string;
  data: Record<string, unknown>;
}

const labelled = (c: string[], i: string[] = []) => ({ confidentiality: c, integrity: i });

describe('observations labelled by provenance (design 3/4)', () => {
  async function secretRun(name: string, clearance: string[]) {
    const repo = await scratch.sampleRepo();
    const secrets = await dirWith(`secrets-${name}`, { x: 'the secret\n' });
    const profile = await scratch.file(
      `${name}.yaml`,
      `extends: untrusted-repo\nname: ${name}\ncfc: { mode: enforce-explicit, modelClearance: [${clearance.join(', ')}] }\nworkspace: { mode: rw, label: { integrity: [repo:untrusted] } }\nmounts:\n  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }\n`,
    );
    const s = await script(name, ['{ name: read_file, input: { path: /secrets/x } }']);
    const root = scratch.path(`art-${name}`);
    const run = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script: s }),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const events = (await readEvents(dir)) as unknown as Ev[];
    const transcript = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
    return { dir, events, transcript, results: await toolResults(dir) };
  }

  it('enforce-explicit, modelClearance []: the secret reaches the model only as a handle', async () => {
    const { events, transcript, results } = await secretRun('opaque', []);
    const handle = results[0]?.observation.items[0] ?? '';
    expect(handle).toMatch(/^cfh-val:[a-z2-7]{20}$/);
    expect(results[0]?.observation).toMatchObject({ status: 'success', items: [handle] });
    expect(results[0]?.observation.summary).toContain(`held as ${handle}`);
    expect(transcript).not.toContain('the secret');
    const minted = events.find((e) => e.type === 'cfc_handle');
    // An operator mount labelled without integrity: its value's integrity does not count.
    expect(minted?.data).toMatchObject({ action: 'minted', handle, integrityCounts: false });
    expect(JSON.stringify(events)).not.toContain('the secret');
    const l = events.find((e) => e.type === 'cfc_label');
    expect(l?.data).toMatchObject({
      callId: 'call-0001',
      source: 'mount /secrets',
      label: labelled(['secret']),
      disposition: 'opaque',
      handle,
    });
    // Opaque is not joined (AH-CFC-7): turn 2's influence is still the direct command's.
    const influence = events.filter((e) => e.type === 'cfc_influence').map((e) => e.data);
    expect(influence).toEqual([
      { turn: 1, label: labelled([], ['prompt:direct']), joined: 0, authority: 'capture-1' },
      { turn: 2, label: labelled([], ['prompt:direct']), joined: 0, authority: 'capture-1' },
    ]);
    // Labelled before the result reached the model: before the next model call.
    const at = (t: string) => events.findIndex((e) => e.type === t);
    expect(at('cfc_label')).toBeLessThan(
      events.findLastIndex((e) => e.type === 'model_call_started'),
    );
  });

  it('modelClearance [secret]: exposed, and the next turn carries secret', async () => {
    const { events, results } = await secretRun('exposed', ['secret']);
    expect(results[0]?.observation).toMatchObject({ status: 'success', items: ['the secret\n'] });
    expect(events.find((e) => e.type === 'cfc_label')?.data).toMatchObject({
      disposition: 'exposed',
      label: labelled(['secret']),
    });
    const turn2 = events.find((e) => e.type === 'cfc_influence' && e.data.turn === 2);
    // secret joined; integrity: prompt:direct ∩ {} = {}, so the authority is gone.
    expect(turn2?.data).toEqual({
      turn: 2,
      label: labelled(['secret']),
      joined: 1,
      authority: null,
    });
  });

  it("exec's observation carries its container's mounts: a repo:untrusted workspace", async () => {
    const repo = await scratch.sampleRepo();
    const profile = await scratch.file(
      'exec.yaml',
      `extends: untrusted-repo\nname: exec\ncfc: { mode: enforce-explicit, modelClearance: [internal] }\nworkspace: { mode: rw, label: { confidentiality: [internal], integrity: [repo:untrusted] } }\n`,
    );
    const s = await script('exec', ['{ name: exec, input: { command: [cat, calc.py] } }']);
    const root = scratch.path('art-exec');
    const run = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script: s }),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const events = (await readEvents(await onlyRunDir(root))) as unknown as Ev[];
    // influence {i: prompt:direct} joined with the workspace {c: internal; i: repo:untrusted}:
    // more secret, less trusted; the direct command's authority does not survive it.
    expect(events.find((e) => e.type === 'cfc_label')?.data).toMatchObject({
      source: 'exec',
      label: labelled(['internal']),
      disposition: 'exposed',
    });
    expect(events.find((e) => e.type === 'cfc_influence' && e.data.turn === 2)?.data).toMatchObject(
      {
        label: labelled(['internal']),
        joined: 1,
        authority: null,
      },
    );
  });
});
