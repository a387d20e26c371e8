// What an operator-only identifier answers through a tool's echo, against real runs
// (AH-REF-4): an exec tool with JSON output echoes the model's query, which JSON escapes; the
// model's guesses, quoted, come back as it wrote them (escaped as the JSON holds them), so
// the view is the same whichever guess is the identifier, and the id field is a reference.
import { describe, expect, it } from 'vitest';
import { onlyRunDir, useScratch } from './helpers.js';
import { NODE, modelView, next, profile, scriptedRun } from './adv-round3-support.js';
import { script } from './adv-round3-support.js';

const scratch = useScratch('host-refs-echo');

async function accountProfile(id: string): Promise<string> {
  const program = await scratch.file(
    `account-${next()}.mjs`,
    `process.stdout.write(JSON.stringify({ account: { id: ${JSON.stringify(id)} }, query: process.argv[2] }));\n`,
  );
  return profile(scratch, {
    tools: ['read_file'],
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

describe('an echo of the model guesses, JSON-escaped', () => {
  it('shows the guesses as written whichever is the identifier, the id field as its reference', async () => {
    const guesses = '"acct_83712" or "acct_11111"';
    const views: string[][] = [];
    for (const id of ['acct_83712', 'acct_11111']) {
      const run = await scriptedRun(scratch, {
        profile: await accountProfile(id),
        script: await script(scratch, [
          [{ name: 'host__account', input: { q: 'hello' } }],
          [{ name: 'host__account', input: { q: guesses } }],
        ]),
      });
      expect(run.r.exitCode, run.r.stderr).toBe(0);
      views.push(await modelView(await onlyRunDir(run.artifactRoot)));
    }
    expect(views[0]).toEqual(views[1]);
    const echoed = views[0]?.[1] ?? '';
    expect(echoed).toContain('cfh-ref:<ref>');
    expect(echoed).toContain(JSON.stringify(JSON.stringify(guesses).slice(1, -1)).slice(1, -1));
  });
});
