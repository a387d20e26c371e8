// Class: a cleared host tool's store inside a mounted tree is not recorded as what the run
// wrote there, so a later run under another profile reads the secret under the tree's
// configured (weaker) label.
//
// docs/operators.md, "A sink is a source of what it may receive": a host tool that a value
// was sent to "can hand it back to any later call, of this run or another"; "a mount holding
// a path that a cleared host tool's arguments or env values name (a notes file, a store
// directory ...) carries the tool's clearance in its label, so what the tool wrote there
// does not come back through read_file under the mount's lower label". And "What a run wrote
// stays in the tree's label": the next run "would read the token under the weaker label. So
// every run under CFC ... records what it may write into each host tree it mounts".
//
// Run 1 (a profile with a notes tool cleared for `secret`, whose STORE names a file in the
// read-only workspace, as the docs require: a store in an rw mount is refused) hands the
// secret to the tool, which keeps it in the workspace. Run 2, under a profile without that
// tool, reads the notes file: the workspace is mounted at its configured label (nothing was
// recorded), and the secret is shown to a model cleared for nothing.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import {
  ALLOW_NOTES,
  STORE_JS,
  TOKEN,
  notesTool,
  profile,
  script,
  scriptedRun,
  secretDir,
  snapshotOf,
  stateEnv,
  transcriptText,
} from './adv-round5-support.js';

const scratch = useScratch('adv5-store');

describe('adv round 5: a host tool store written into a mounted tree', () => {
  it('what a cleared host tool stored in the workspace is not read under the workspace label by a later run', async () => {
    const env = stateEnv(scratch, 'store');
    // The operator's own checkout (root's, as cfh is here): a host tool's paths must be
    // changeable by nobody but root and cfh's user (host_tool_program_writable).
    const workspace = scratch.path('checkout');
    await mkdir(workspace, { recursive: true });
    await writeFile(path.join(workspace, 'README.md'), 'a project\n');
    await mkdir(path.join(workspace, 'notes'), { recursive: true });
    const store = path.join(workspace, 'notes', 'store.txt');
    await writeFile(store, '');
    const toolsDir = scratch.path('tools');
    await mkdir(toolsDir, { recursive: true });
    await writeFile(path.join(toolsDir, 'store.mjs'), STORE_JS);
    const secrets = await secretDir(scratch, { token: TOKEN });

    const withTool = await profile(scratch, {
      tools: ['read_file'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      hostTools: [notesTool(toolsDir, store, { clearance: ['secret'] })],
      policy: ALLOW_NOTES,
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const first = await scriptedRun(scratch, {
      profile: withTool,
      script: await script(scratch, [
        [{ name: 'read_file', input: { path: '/secrets/token' } }],
        [{ name: 'host__notes', input: { op: 'put', text: '{{handle:1}}' } }],
      ]),
      workspace,
      env,
    });
    expect(first.r.exitCode, first.r.stderr).toBe(0);
    // The tool kept the secret in the workspace tree.
    expect(await readFile(store, 'utf8')).toContain(TOKEN);
    // In run 1 itself the workspace carries the tool's clearance (the store mechanism).
    const s1 = await snapshotOf(first.dir);
    expect(s1.cfc.mounts.find((m) => m.target === '/workspace')?.label?.confidentiality).toContain(
      'secret',
    );

    // Run 2: an everyday profile, no notes tool, the same workspace and state directory.
    const everyday = await profile(scratch, {
      tools: ['read_file'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const later = await scriptedRun(scratch, {
      profile: everyday,
      script: await script(scratch, [[{ name: 'read_file', input: { path: 'notes/store.txt' } }]]),
      workspace,
      env,
    });
    expect(later.r.exitCode, later.r.stderr).toBe(0);
    // Secure: the secret the earlier run's tool stored there never reaches this model.
    expect(await transcriptText(later.dir)).not.toContain(TOKEN);
  });
});
