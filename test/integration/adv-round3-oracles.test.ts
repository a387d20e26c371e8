// Adversarial round 3, classes 2-4: an opaque observation must answer no question about the
// value it hides, and a handle used as an argument must not come back through what cfh says
// of the call. Each test runs the same script twice, against two secrets that differ only in
// their value, and compares what the model was shown (every tool result, run-salted names
// normalised): cfh holds when the two views are the same. A handle is resolved BEFORE the
// call is checked against its schema and decided, so whatever the check or the decision
// says depends on the value: whether it is valid (a schema's maxLength, a host tool's
// pattern), what the refusal text says (cfh writes every spelling of the value back as the
// handle, in any text, the model's own words in it too), whether two keys collide, whether
// a policy rule's pattern matches.
import { describe, it } from 'vitest';
import { useScratch } from './helpers.js';
import { apiRun } from './host-tools-support.js';
import {
  expectSameView,
  modelView,
  printer,
  profile,
  script,
  scriptedRun,
  secretDir,
  NODE,
} from './adv-round3-support.js';

const scratch = useScratch('adv3-oracles');

/** A read-only workspace and a `secret` mount holding `pin`; the model is cleared for nothing. */
async function pinProfile(
  value: string,
  mode = 'enforce-explicit',
  extra: Record<string, unknown> = {},
): Promise<string> {
  const secrets = await secretDir(scratch, { pin: value });
  return profile(scratch, {
    tools: ['read_file', 'list_dir', 'grep', 'exec'],
    workspace: { mode: 'ro', label: { integrity: ['repo'] } },
    cfc: { mode, modelClearance: [] },
    mounts: [
      { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
    ],
    ...extra,
  });
}

const READ_PIN = { name: 'read_file', input: { path: '/secrets/pin' } };

/** The model's view of the same script run against each secret. */
async function viewsOf(
  values: readonly [string, string],
  turns: readonly (readonly { name: string; input: unknown }[])[],
  mode = 'enforce-explicit',
  extra: Record<string, unknown> = {},
): Promise<[string[], string[]]> {
  const s = await script(scratch, turns);
  const out: string[][] = [];
  for (const v of values) {
    const { dir } = await scriptedRun(scratch, {
      profile: await pinProfile(v, mode, extra),
      script: s,
    });
    out.push(await modelView(dir));
  }
  return [out[0] ?? [], out[1] ?? []];
}

describe.each(['enforce-explicit', 'enforce-strict'])('%s: a handle used in a call', (mode) => {
  it("the refusal text of a call using the handle does not rewrite the model's own words that spell the value (a dictionary in one call)", async () => {
    // Unknown keys are echoed in the refusal; cfh writes each spelling of the resolved value
    // back as the handle, so the candidate equal to the secret (or containing it) comes
    // back as `cfh-val:…` and the others as written.
    const probe = {
      name: 'read_file',
      input: { path: '{{handle:1}}', '1111': 0, '4821': 0, '9999': 0, x4821y: 0 },
    };
    const [a, b] = await viewsOf(['4821', '1111'], [[READ_PIN], [probe]], mode);
    expectSameView(a, b);
  });

  it("a schema's bound on the resolved value does not tell the value's length", async () => {
    // read_file's path is at most 4096 characters: 4092 characters and the handle make a
    // valid call for a 4-character secret (it runs: an opaque result) and an invalid one
    // for a 5-character secret ("Too big"). A bisection finds the exact length.
    const probe = { name: 'read_file', input: { path: `${'A'.repeat(4092)}{{handle:1}}` } };
    const [a, b] = await viewsOf(['4821', '48210'], [[READ_PIN], [probe]], mode);
    expectSameView(a, b);
  });

  it("a policy rule's argument bound does not tell the value's length", async () => {
    // operators.md's ask-before-rm rule, written as a /regex/; a value past 10 000
    // characters is not tested and matches a rule that asks: 9 996 characters and a
    // 4-character secret are tested (the exec runs, opaque), a 5-character one is not
    // (approval_required).
    const probe = { name: 'exec', input: { command: [`${'A'.repeat(9996)}{{handle:1}}`] } };
    const [a, b] = await viewsOf(['4821', '48210'], [[READ_PIN], [probe]], mode, {
      policy: [
        {
          id: 'ask-before-rm',
          match: { tool: 'exec', args: { 'command.0': '/^rm$/' } },
          decision: 'approval_required',
          reason: 'removing files needs a person',
        },
      ],
    });
    expectSameView(a, b);
  });
});

describe('a host tool cleared for the secret (the worked example of docs/operators.md)', () => {
  it.each(['enforce-explicit', 'enforce-strict'])(
    "%s: its input pattern on the resolved value does not tell the model what the value's characters are",
    async (mode) => {
      // examples/cfc/profile.yaml: deploy's token is `[A-Za-z0-9:._-]+`, at most 200
      // characters. A secret with a character outside that class makes the call invalid
      // (invalid arguments), one inside it a valid call refused by the flow or policy.
      const deploy = await printer(scratch, 'deployed');
      const extra = {
        hostTools: [
          {
            name: 'deploy',
            kind: 'exec',
            argv: [NODE, deploy, '{token}'],
            input: { token: { type: 'string', maxLength: 200, pattern: '[A-Za-z0-9:._-]+' } },
            riskClass: 'write_external',
            sideEffectClass: 'external_commitment',
            resourceScope: 'external',
            resultLabel: { integrity: ['ops'] },
            clearance: ['secret'],
          },
        ],
      };
      const probe = { name: 'host__deploy', input: { token: '{{handle:1}}' } };
      const [a, b] = await viewsOf(['tok-4821', 'tok 4821'], [[READ_PIN], [probe]], mode, extra);
      expectSameView(a, b);
    },
  );
});

describe('keys that resolve alike (a model that reads its context)', () => {
  it('two keys, one a guess and one the handle, do not tell whether the guess is the value', async () => {
    const views: string[][] = [];
    for (const value of ['4821', '1111']) {
      const p = await pinProfile(value);
      const handleIn = (request: string): string => {
        const m = /cfh-val:[a-z2-7]{20}/.exec(request);
        if (m === null) throw new Error('no handle shown');
        return m[0];
      };
      const run = await apiRun(
        scratch,
        `collide-${value}`,
        p,
        [
          [READ_PIN],
          (request) => [
            { name: 'read_file', input: { path: 'README.md', '4821': 0, [handleIn(request)]: 0 } },
          ],
        ],
        {},
      );
      views.push(await modelView(run.dir));
    }
    expectSameView(views[0] ?? [], views[1] ?? []);
  });
});
