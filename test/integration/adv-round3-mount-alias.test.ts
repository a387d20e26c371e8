// Adversarial round 3, class 6 (one tree under two paths and two labels), inside the
// container: a mount's target that goes through a symlink of the image is mounted where the
// link leads (the engine resolves the target inside the root file system), while CFC labels
// a file tool's path lexically by the target as written. The sandbox image has
// `/var/run -> /run` and `/var/lock -> /run/lock`; `/var/run/secrets` is the conventional
// place for secrets (Kubernetes). A secret mounted there is read as `/run/secrets/...`, a
// path in no mount: "the image's own files", not joined, shown to the model as it is. The
// file helper's mount-boundary check compares real paths with the targets as written, so it
// sees no boundary either. cfh holds when the model's context never holds the secret.
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { leaksIn } from './host-tools-support.js';
import { profile, script, scriptedRun, secretDir, transcriptText } from './adv-round3-support.js';

const scratch = useScratch('adv3-alias');
const SECRET = 'alias-secret-7Qm2xVw9';

describe.each(['enforce-explicit', 'enforce-strict'])(
  '%s: a mount target through an image link',
  (mode) => {
    it.each([
      ['/var/run/secrets', '/run/secrets'],
      ['/var/lock/secrets', '/run/lock/secrets'],
    ])(
      'a secret mounted at %s is not shown to the model when read as %s',
      async (target, alias) => {
        const secrets = await secretDir(scratch, { token: SECRET });
        const p = await profile(scratch, {
          tools: ['read_file', 'list_dir', 'grep'],
          workspace: { mode: 'ro', label: { integrity: ['repo'] } },
          cfc: { mode, modelClearance: [] },
          mounts: [{ source: secrets, target, mode: 'ro', label: { confidentiality: ['secret'] } }],
        });
        const s = await script(scratch, [
          [
            { name: 'read_file', input: { path: `${target}/token` } },
            { name: 'read_file', input: { path: `${alias}/token` } },
            { name: 'grep', input: { pattern: 'secret', path: alias } },
          ],
        ]);
        const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
        // A planning refusal of such a target would hold too (nothing ran).
        if (r.exitCode === 125) return;
        expect(r.exitCode, r.stderr).toBe(0);
        const seen = new Map([['transcript.jsonl', await transcriptText(dir)]]);
        expect(leaksIn(seen, SECRET)).toEqual([]);
      },
    );
  },
);
