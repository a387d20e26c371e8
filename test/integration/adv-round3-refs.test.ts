// Adversarial round 3, class 12 (opaque host-tool references): an operator-only identifier
// reaches the model as `cfh-ref:<entry>:<16 base32>` and "is never shown to the model"
// (operators.md, "Operator-only identifiers"). Two questions the model may still ask of it:
// - every host result the model is shown has each held value replaced by its reference,
//   wherever it occurs: a tool that echoes what the model sent (a search query, an error
//   naming its input) turns the model's own guesses into the reference exactly where a guess
//   is the identifier: a dictionary in one call;
// - a reference is resolved before the call is checked against the tool's input schema, so
//   a maxLength bound says whether text around the reference plus the value fits.
// Each test runs the same model against two identifiers and compares what it was shown
// (names normalised): cfh holds when the two views are the same.
import { describe, it } from 'vitest';
import { useScratch } from './helpers.js';
import {
  NODE,
  apiCfh,
  expectSameView,
  modelView,
  next,
  profile,
  type ApiTurn,
} from './adv-round3-support.js';
import { onlyRunDir } from './helpers.js';

const scratch = useScratch('adv3-refs');

/** An exec host tool with JSON output: the account's id (operator-only) and its query echoed. */
async function accountProfile(id: string): Promise<string> {
  const program = await scratch.file(
    `account-${next()}.mjs`,
    `process.stdout.write(JSON.stringify({ account: { id: ${JSON.stringify(id)} }, query: process.argv[2] }));\n`,
  );
  return profile(scratch, {
    tools: ['read_file', 'list_dir'],
    workspace: { mode: 'ro', label: { integrity: ['repo'] } },
    hostTools: [
      {
        name: 'account',
        kind: 'exec',
        argv: [NODE, program, '{q}'],
        input: { q: { type: 'string', maxLength: 64, pattern: '[ -~]*' } },
        output: 'json',
        operatorOnly: [{ kind: 'account', field: '/account/id' }],
        riskClass: 'read_only',
        sideEffectClass: 'none',
        resourceScope: 'project',
      },
    ],
  });
}

async function viewsOf(ids: readonly [string, string], turns: readonly ApiTurn[]) {
  const views: string[][] = [];
  for (const id of ids) {
    const art = scratch.path(`art-${next()}`);
    const { r } = await apiCfh(
      scratch,
      [
        'sandbox',
        'run',
        '--profile',
        await accountProfile(id),
        '--workspace',
        await scratch.sampleRepo(),
        '--artifact-root',
        art,
        '--prompt',
        'Look the account up',
        '--non-interactive',
      ],
      [...turns, { text: 'done' }],
    );
    if (r.exitCode !== 0) throw new Error(`cfh exited ${r.exitCode}: ${r.stderr}`);
    views.push(await modelView(await onlyRunDir(art)));
  }
  return views as [string[], string[]];
}

const refIn = (req: string): string => {
  const m = /cfh-ref:account:[a-z2-7]{16}/.exec(req);
  if (m === null) throw new Error('no reference shown');
  return m[0];
};

describe('class 12: what an operator-only identifier answers', () => {
  it("a host result echoing the model's guesses does not mark the guess that is the identifier", async () => {
    const [a, b] = await viewsOf(
      ['acct_83712', 'acct_11111'],
      [
        { calls: [{ name: 'host__account', input: { q: 'hello' } }] },
        { calls: [{ name: 'host__account', input: { q: 'acct_83712 acct_11111 acct_99999' } }] },
      ],
    );
    expectSameView(a, b);
  });

  it("the input schema's maxLength on the resolved reference does not tell the identifier's length", async () => {
    const [a, b] = await viewsOf(
      ['acct_83712', 'acct_837120'],
      [
        { calls: [{ name: 'host__account', input: { q: 'hello' } }] },
        {
          calls: (req) => [
            { name: 'host__account', input: { q: `${'A'.repeat(54)}${refIn(req)}` } },
          ],
        },
      ],
    );
    expectSameView(a, b);
  });
});
