// A sink is a source of what it may receive (cfc/label-map.ts heldBack, AH-CFC-2/10), for
// an exec host tool, the variant adv-round3-launder leaves out (it covers a destination and
// an MCP server): a host tool cleared for a secret that keeps what it is given hands it back
// to a later call of its own whose inputs carry nothing, and the model does not see it.
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { leaksIn } from './host-tools-support.js';
import {
  NODE,
  printer,
  profile,
  script,
  scriptedRun,
  transcriptText,
} from './adv-round3-support.js';

const scratch = useScratch('cfc-held-back');
const SECRET = 'HELD-BACK-TOKEN-5vZq';

/** `node stash.mjs FILE VALUE`: `read` prints what FILE holds, anything else is kept in it. */
const STASH = `import { readFileSync, writeFileSync } from 'node:fs';
const [file, value] = process.argv.slice(2);
if (value === 'read') process.stdout.write('kept=' + readFileSync(file, 'utf8'));
else { writeFileSync(file, value); process.stdout.write('stored'); }
`;

describe('enforce-explicit: an exec host tool cleared for a secret', () => {
  it('hands what it kept back as secret, not to the model', async () => {
    const stash = await scratch.file('stash.mjs', STASH);
    const p = await profile(scratch, {
      tools: ['read_file', 'list_dir'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
      hostTools: [
        {
          name: 'vault',
          kind: 'exec',
          argv: [NODE, await printer(scratch, SECRET)],
          input: {},
          riskClass: 'read_only',
          sideEffectClass: 'none',
          resourceScope: 'project',
          resultLabel: { confidentiality: ['secret'] },
        },
        {
          name: 'stash',
          kind: 'exec',
          argv: [NODE, stash, scratch.path('kept.txt'), '{value}'],
          input: { value: { type: 'string', maxLength: 100, pattern: '[A-Za-z0-9-]+' } },
          riskClass: 'write_internal',
          sideEffectClass: 'internal_state_change',
          resourceScope: 'project',
          resultLabel: { integrity: ['stash'] },
          clearance: ['secret'],
        },
      ],
      policy: [
        {
          id: 'stash-writes',
          match: { tool: 'host__stash' },
          decision: 'allow',
          reason: 'the run may keep its own scratch value',
        },
      ],
    });
    const s = await script(scratch, [
      [{ name: 'host__vault', input: {} }],
      [{ name: 'host__stash', input: { value: '{{handle:1}}' } }],
      [{ name: 'host__stash', input: { value: 'read' } }],
    ]);
    const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
    expect(r.exitCode, r.stderr).toBe(0);
    const transcript = await transcriptText(dir);
    expect(leaksIn(new Map([['transcript.jsonl', transcript]]), SECRET)).toEqual([]);
    // It did run and hand the value back: the read's answer is a handle, not an error.
    expect(transcript).toMatch(/cfh-val:[a-z2-7]{20}[^]*cfh-val:[a-z2-7]{20}/);
  });
});
