// Class: "one host tool state has one clearance" is decided by how the command is spelled:
// two entries that run the same program on the same script, spelled once by absolute path
// and once relative to the same cwd, are not "the same command with the same settings", so
// the entry cleared for a secret stores it and the uncleared one hands it back to the model.
//
// docs/operators.md, "A sink is a source of what it may receive": "one host tool state has
// one clearance: two entries that run the same command with the same settings ... under
// different clearances, in the run's profile or across the children it may delegate to, are
// refused at planning (125, `host_tool_state_shared`): what the entry cleared for a secret
// stores, the other would hand back under its lower label". The store here is the tool's
// default place (beside its script), which neither configuration names: exactly the state the
// "same command" rule exists for.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import {
  NODE,
  TOKEN,
  profile,
  script,
  scriptedRun,
  secretDir,
  stateEnv,
  transcriptText,
} from './adv-round5-support.js';

const scratch = useScratch('adv5-spelling');

/** put TEXT appends to state.txt beside the script; get prints it. */
const DEFAULT_STORE_JS = `import { appendFileSync, readFileSync } from 'node:fs';
const f = new URL('./state.txt', import.meta.url);
const [op, text] = process.argv.slice(2);
if (op === 'put') { appendFileSync(f, text + '\\n'); process.stdout.write('stored\\n'); }
else { let s = ''; try { s = readFileSync(f, 'utf8'); } catch {} process.stdout.write('notes: ' + s + '\\n'); }
`;

function tool(name: string, argv0: string, scriptArg: string, cwd: string, clearance: string[]) {
  return {
    name,
    kind: 'exec',
    argv: [argv0, scriptArg, '{op}', '{text}'],
    cwd,
    input: {
      op: { type: 'string', pattern: 'get|put' },
      text: { type: 'string', maxLength: 2000, pattern: '[\\s\\S]*' },
    },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    clearance,
  };
}

describe('adv round 5: one host tool state under two spellings', () => {
  it('two entries of one program and script, spelled differently, under different clearances are refused', async () => {
    const env = stateEnv(scratch, 'spelling');
    const toolsDir = scratch.path('tools');
    await mkdir(toolsDir, { recursive: true });
    await writeFile(path.join(toolsDir, 'store.mjs'), DEFAULT_STORE_JS);
    const secrets = await secretDir(scratch, { token: TOKEN });
    const p = await profile(scratch, {
      tools: ['read_file'],
      workspace: { mode: 'ro', label: { integrity: ['repo'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      hostTools: [
        tool('vault', NODE, path.join(toolsDir, 'store.mjs'), toolsDir, ['secret']),
        tool('notes', NODE, './store.mjs', toolsDir, []),
      ],
      policy: [
        { id: 'allow-vault', match: { tool: 'host__vault' }, decision: 'allow', reason: 't' },
        { id: 'allow-notes', match: { tool: 'host__notes' }, decision: 'allow', reason: 't' },
      ],
      cfc: { mode: 'enforce-explicit', modelClearance: [] },
    });
    const run = await scriptedRun(scratch, {
      profile: p,
      script: await script(scratch, [
        [{ name: 'read_file', input: { path: '/secrets/token' } }],
        [{ name: 'host__vault', input: { op: 'put', text: '{{handle:1}}' } }],
        [{ name: 'host__notes', input: { op: 'get', text: '' } }],
      ]),
      env,
    });
    // Secure: refused at planning (host_tool_state_shared), or at least the model never sees
    // the secret the cleared entry stored.
    if (run.r.exitCode === 125) {
      expect(run.r.stderr).toMatch(/host_tool_state_shared|same command/);
      return;
    }
    expect(await transcriptText(run.dir)).not.toContain(TOKEN);
    expect.fail(`the run was not refused (exit ${run.r.exitCode})`);
  });
});
