// `cfh labels` says where a recorded tree is: at its path (`here`), another object at its
// path since (`replaced`: an atomic save; the label holds at the place and follows the old
// object), or nothing there (`away`). Round 7 found a replaced store listed as "moved,
// renamed or deleted", which invited a needless `cfh labels forget`.
import { mkdir, rename, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { cfh, useScratch } from './helpers.js';
import { profile, secretDir } from './adv-round3-support.js';

const scratch = useScratch('adv-round7-labels');

async function states(env: Record<string, string>): Promise<string[]> {
  const listed = await cfh(['labels', '--json'], { env });
  expect(listed.exitCode, listed.stderr).toBe(0);
  return (JSON.parse(listed.stdout) as { trees: { state: string }[] }).trees.map((t) => t.state);
}

describe('cfh labels: where a recorded tree is', () => {
  it('here, replaced by another object at its path, or away', async () => {
    const env = { CFH_STATE_DIR: scratch.path('state') };
    const secrets = await secretDir(scratch, { token: 'LABELS-STATE-7' });
    const workspace = await scratch.sampleRepo();
    const deploy = await profile(scratch, {
      workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const wrote = await cfh(
      [
        'sandbox',
        'run',
        '--profile',
        deploy,
        '--workspace',
        workspace,
        '--artifact-root',
        scratch.path('art'),
        '--',
        'sh',
        '-c',
        'cat /secrets/token > /workspace/.env',
      ],
      { env },
    );
    expect(wrote.exitCode, wrote.stderr).toBe(0);
    expect(await states(env)).toEqual(['here']);
    await rename(workspace, `${workspace}-old`);
    await mkdir(workspace);
    expect(await states(env)).toEqual(['replaced']);
    const listed = await cfh(['labels'], { env });
    expect(listed.stdout).toContain('(another object at this path since');
    await rm(workspace, { recursive: true });
    expect(await states(env)).toEqual(['away']);
  }, 120_000);
});
