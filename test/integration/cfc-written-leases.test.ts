// Two runs at once on one tree (engine/cfc/written-leases.ts, AH-CFC-2/7): while a run that
// reads the workspace as nothing confidential is going, a deploy run's write of a secret
// into that workspace is answered as not run, naming the run that holds it, and nothing is
// recorded or written; a command run that could write it fails before it starts
// (written_tree_in_use, 125). Once the first run has ended its lease is gone and the same
// write goes through.
import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, readEvents, startCfh, useScratch, waitForEvent } from './helpers.js';
import {
  TOKEN,
  allText,
  modelResults,
  profile,
  script,
  scriptedRun,
  secretDir,
  stateEnv,
} from './adv-round5-support.js';

const scratch = useScratch('cfc-leases');

describe('cfc: a tree another live run reads under less', () => {
  it('refuses the write that would reach it, and allows it once that run has ended', async () => {
    const env = stateEnv(scratch, 'leases');
    const workspace = await scratch.sampleRepo();
    const secrets = await secretDir(scratch, { token: TOKEN });
    const everyday = await profile(scratch, {
      tools: ['exec'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const deploy = await profile(scratch, {
      tools: ['read_file', 'write_file'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const render = await script(scratch, [
      [{ name: 'read_file', input: { path: '/secrets/token' } }],
      [{ name: 'write_file', input: { path: '.env', content: 'TOKEN={{handle:1}}\n' } }],
    ]);
    const bRoot = scratch.path('art-b');
    const b = startCfh(
      agentRunArgs(
        {
          workspace,
          artifactRoot: bRoot,
          profile: everyday,
          prompt: 'wait',
          script: await script(scratch, [
            [{ name: 'exec', input: { command: ['sh', '-c', 'sleep 8'] } }],
          ]),
        },
        ['--non-interactive'],
      ),
      { env },
    );
    await waitForEvent(bRoot, 'permission_decision', 120_000);
    const leases = path.join(env.CFH_STATE_DIR ?? '', 'written-labels', 'leases');
    expect(await readdir(leases)).toHaveLength(1);

    const refused = await scriptedRun(scratch, { profile: deploy, script: render, workspace, env });
    expect(refused.r.exitCode, refused.r.stderr).toBe(0);
    // The refusal is the call's observation, in the evidence; the model holds it as a handle
    // (it is labelled as the call was: it names what would have been written).
    expect(await allText(refused.dir)).toMatch(
      /not run: run \S+ \(pid \d+\) has '[^']*' mounted and reads it as \{confidentiality: -; integrity: repo\}/,
    );
    expect((await modelResults(refused.dir)).join('\n')).not.toContain(TOKEN);
    expect((await readEvents(refused.dir)).some((e) => e.type === 'cfc_written')).toBe(false);
    await expect(access(path.join(workspace, '.env'))).rejects.toThrow();

    // A command run that reads the secret and could write it into the workspace.
    const command = await cfh(
      [
        'sandbox',
        'run',
        '--profile',
        deploy,
        '--workspace',
        workspace,
        '--artifact-root',
        scratch.path('art-cmd'),
        '--',
        'true',
      ],
      { env: { CFH_KEY_DIR: scratch.path('keys'), ...env } },
    );
    expect(command.exitCode).toBe(125);
    expect(command.stderr).toMatch(/failed \(error:written_tree_in_use, exit 125\)/);
    expect(command.stderr).toMatch(
      /the command could write what it reads into \/workspace, but run /,
    );

    expect((await b).exitCode).toBe(0);
    expect(await readdir(leases)).toEqual([]);
    const allowed = await scriptedRun(scratch, { profile: deploy, script: render, workspace, env });
    expect(allowed.r.exitCode, allowed.r.stderr).toBe(0);
    await access(path.join(workspace, '.env'));
  });
});
