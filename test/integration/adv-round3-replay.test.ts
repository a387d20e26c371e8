// Adversarial round 3, second pass, against the handle salting (class 12) and the carried
// label (class 1): a handle a model was shown in one run, named in another run of the same
// profile and artifact root (not a resume: nothing carried), must not resolve there, not
// even into a sink cleared for the value (the handle names a referent of its own run only);
// and a resumed run that is given the old run's handle in its direct command (the operator's
// text, copied from the old transcript) must not treat it as a value the operator typed.
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownBySandbox, useScratch } from './helpers.js';
import { modelResults, profile, script, scriptedRun, secretDir } from './adv-round3-support.js';

const scratch = useScratch('adv3-replay');
const SECRET = 'REPLAY-K3y-7mQ2xW9p';

/** A `secret` mount, an /out cleared for `secret`, the model cleared for nothing. */
async function vaultProfile(mode: string): Promise<{ p: string; out: string }> {
  const secrets = await secretDir(scratch, { key: SECRET });
  const out = scratch.path(`out-${mode}-${Date.now()}`);
  await mkdir(out);
  await ownBySandbox(out);
  const p = await profile(scratch, {
    tools: ['read_file', 'write_file', 'list_dir'],
    workspace: { mode: 'ro', label: { integrity: ['repo'] } },
    cfc: { mode, modelClearance: [] },
    mounts: [
      { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      {
        source: out,
        target: '/out',
        mode: 'rw',
        label: { integrity: ['out'] },
        clearance: ['secret'],
      },
    ],
  });
  return { p, out };
}

describe.each(['enforce-explicit', 'enforce-strict'])(
  '%s: a handle replayed in another run',
  (mode) => {
    it('does not resolve there, even into a sink cleared for its value', async () => {
      const { p, out } = await vaultProfile(mode);
      const art = scratch.path(`art-${mode}`);
      // Run A: the model is shown a handle for the key.
      const a = await scriptedRun(scratch, {
        profile: p,
        artifactRoot: art,
        script: await script(scratch, [[{ name: 'read_file', input: { path: '/secrets/key' } }]]),
      });
      const handle = /cfh-val:[a-z2-7]{20}/.exec((await modelResults(a.dir)).join('\n'))?.[0];
      expect(handle, 'run A showed a handle').toBeDefined();
      // Run B (a new run, same profile and root): the model names A's handle in a write to
      // /out, after it read the key itself (B holds a value of the same label).
      const b = await scriptedRun(scratch, {
        profile: p,
        artifactRoot: scratch.path(`art-b-${mode}`),
        script: await script(scratch, [
          [{ name: 'read_file', input: { path: '/secrets/key' } }],
          [
            {
              name: 'write_file',
              input: { path: '/out/replayed.txt', content: handle ?? '' },
            },
          ],
          // The control: B's own handle resolves into the cleared /out.
          [{ name: 'write_file', input: { path: '/out/own.txt', content: '{{handle:1}}' } }],
        ]),
      });
      expect(b.r.exitCode, b.r.stderr).toBeLessThan(2);
      const written = await readFile(path.join(out, 'replayed.txt'), 'utf8').catch(() => '');
      expect(written).not.toContain(SECRET);
      const own = await readFile(path.join(out, 'own.txt'), 'utf8').catch(() => '');
      expect(own, 'the control: a handle of this run').toContain(SECRET);
    });
  },
);
