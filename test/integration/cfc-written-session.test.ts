// What a session writes raises its workspace's label for later runs (cfc/written-labels.ts),
// and a raise only narrows: restoring the session after its own writes is the same authority
// (AH-INT-4 compares the configuration's labels, `configured`), while the restored run still
// mounts the workspace at the raised label.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('cfc-written-session');

const PROFILE = `extends: untrusted-repo
name: writer
tools: [read_file, write_file]
workspace: { mode: rw, label: { integrity: [repo] } }
cfc: { mode: enforce-explicit, modelClearance: [] }
`;
const SCRIPT = `turns:
  - tool_calls: [{ name: write_file, input: { path: notes.txt, content: "from the session\\n" } }]
  - text: written
  - text: again
`;

describe('a session that wrote into its workspace', () => {
  it('is restored as the same authority, at the raised label', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art');
    const env = { CFH_STATE_DIR: scratch.path('state') };
    const flags = [
      '--profile',
      await scratch.file('writer.yaml', PROFILE),
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--script',
      await scratch.file('script.yaml', SCRIPT),
    ];
    const first = new ServeClient(flags, env);
    const session = await first.call('session/open', {});
    const sessionId = String(session.sessionId);
    expect(await first.turn(sessionId, 'write a note')).toMatchObject({ status: 'answered' });
    await first.call('session/close', { sessionId });
    expect(await first.end()).toBe(0);
    expect(await readFile(path.join(repo, 'notes.txt'), 'utf8')).toBe('from the session\n');

    const again = new ServeClient(flags, env);
    const restored = await again.request('session/restore', { sessionId });
    expect(restored.error).toBeUndefined();
    await again.call('session/close', { sessionId });
    expect(await again.end()).toBe(0);
    // The restored run's snapshot: raised by the first run's write, the configuration kept.
    const runs = (await readdir(root)).filter((n) => /^\d{8}T/.test(n)).sort();
    expect(runs).toHaveLength(2);
    const snap = JSON.parse(
      await readFile(path.join(root, runs[1] ?? '', 'snapshot.json'), 'utf8'),
    ) as {
      cfc: {
        mounts: { target: string; labelSource?: string; configured?: { label: unknown } }[];
      };
    };
    const ws = snap.cfc.mounts.find((m) => m.target === '/workspace');
    expect(ws?.labelSource).toBe('written');
    expect(ws?.configured?.label).toEqual({ confidentiality: [], integrity: ['repo'] });
  });
});
