// Class: the written-labels record is read once, at planning; a run already going when an
// other run writes a secret into the same tree reads that secret under its own (weaker)
// configured label. Two runs overlapping in time on one tree launder the label.
//
// docs/operators.md, "What a run wrote stays in the tree's label (`cfh labels`)": "A run
// cleared to write more into it ... leaves that data there, and the next run, under a
// profile whose workspace label says nothing of it, would read the token under the weaker
// label. So every run under CFC ... records what it may write into each host tree it mounts
// writable, and a later run mounts the tree at least at that label (AH-CFC-2/7)". Nothing
// keeps a run that is already going from reading what the deploy run wrote: its plan was
// made before the record existed, and it is never looked at again.
//
// Run B (everyday profile, no clearance) starts and waits for `.env`; run A (deploy, cleared
// to write the secret) writes `.env` from the secret mount; B then reads `.env`: the secret
// is shown to B's model, which is cleared for nothing.
import { describe, expect, it } from 'vitest';
import { startCfh, agentRunArgs, useScratch, waitForEvent } from './helpers.js';
import {
  TOKEN,
  profile,
  script,
  scriptedRun,
  secretDir,
  stateEnv,
  transcriptText,
} from './adv-round5-support.js';

const scratch = useScratch('adv5-race');

describe('adv round 5: a run going while another writes the tree', () => {
  it('a run planned before the deploy run wrote .env does not read the secret under its own label', async () => {
    const env = stateEnv(scratch, 'race');
    const workspace = await scratch.sampleRepo();
    const secrets = await secretDir(scratch, { token: TOKEN });
    const everyday = await profile(scratch, {
      tools: ['read_file', 'exec'],
      workspace: { mode: 'rw', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const waitThenRead = await script(scratch, [
      [
        {
          name: 'exec',
          input: {
            command: [
              'sh',
              '-c',
              'i=0; while [ ! -s /workspace/.env ] && [ $i -lt 250 ]; do sleep 0.1; i=$((i+1)); done; echo waited',
            ],
          },
        },
      ],
      [{ name: 'read_file', input: { path: '.env' } }],
    ]);
    const bRoot = scratch.path('art-b');
    const b = startCfh(
      agentRunArgs(
        {
          workspace,
          artifactRoot: bRoot,
          profile: everyday,
          prompt: 'Summarise',
          script: waitThenRead,
        },
        ['--non-interactive'],
      ),
      { env },
    );
    try {
      // B is planned and its exec is running: only now does A write the tree.
      const bDir = await waitForEvent(bRoot, 'permission_decision', 120_000);
      const deploy = await profile(scratch, {
        tools: ['read_file', 'write_file'],
        workspace: { mode: 'rw', label: { integrity: ['repo'] }, clearance: ['secret'] },
        mounts: [
          {
            source: secrets,
            target: '/secrets',
            mode: 'ro',
            label: { confidentiality: ['secret'] },
          },
        ],
        cfc: { mode: 'enforce-explicit', modelClearance: [] },
      });
      const a = await scriptedRun(scratch, {
        profile: deploy,
        script: await script(scratch, [
          [{ name: 'read_file', input: { path: '/secrets/token' } }],
          [{ name: 'write_file', input: { path: '.env', content: 'TOKEN={{handle:1}}\n' } }],
        ]),
        workspace,
        env,
      });
      expect(a.r.exitCode, a.r.stderr).toBe(0);
      const rb = await b;
      expect(rb.exitCode, rb.stderr).toBe(0);
      // Secure: B's model is shown no secret another run wrote into its tree.
      expect(await transcriptText(bDir)).not.toContain(TOKEN);
    } finally {
      b.kill('SIGTERM');
      await b.catch(() => undefined);
    }
  });
});
