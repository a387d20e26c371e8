// Round 6 (red team): one host tool script run under two clearances, spelled so that
// host_tool_state_shared does not see one script: `python3 -m MODULE` (the module's file),
// `python3 DIR` (a directory's __main__.py), and a `sh -c` wrapper.
//
// docs/operators.md, "Sources" (a sink is a source): "one host tool state has one clearance:
// two entries that run the same command ... under different clearances ... are refused at
// planning (125, host_tool_state_shared) ... Two entries run the same command when they run
// one script, whatever program runs it and whatever else either is given (a script may keep
// state beside itself or under $HOME, where no setting names it: to keep two states of one
// script apart under two clearances, give each its own copy of the script)". Here both
// entries run the one file notes_server.py (which keeps its notes beside itself), one cleared
// for [secret], the other for nothing: what the first stores, the second hands back under
// its lower label. host-tool-identity.ts takes an entry's script to be "the first argument
// that names an existing regular file", so a module name, a directory and a shell command
// line name no script, and the entries are never compared as one script.
//
// Each case asserts the secure behaviour (the run refused, 125, host_tool_state_shared), so
// it FAILS while the break exists. A control case (two spellings of the file itself) shows
// the refusal the others should get.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { dirIn, plainDir, runIn, stateEnv, yamlFile } from './adv-round6-support.js';

const scratch = useScratch('adv6-tool-state');
let tool = '';
let ws = '';
let art = '';
let env: Record<string, string> = {};

const SERVER = `import json, os, sys
store = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notes.json")
notes = json.load(open(store)) if os.path.exists(store) else []
if len(sys.argv) > 1 and sys.argv[1]:
    notes.append(sys.argv[1])
    json.dump(notes, open(store, "w"))
print(json.dumps(notes))
`;

beforeAll(async () => {
  tool = await plainDir(scratch, 'tool');
  await chmod(tool, 0o755);
  await writeFile(path.join(tool, 'notes_server.py'), SERVER);
  await mkdir(path.join(tool, 'notes'));
  await writeFile(path.join(tool, 'notes', '__main__.py'), SERVER);
  ws = await dirIn(scratch, 'ws');
  art = await plainDir(scratch, 'art');
  env = await stateEnv(scratch, 'ts');
});

function entry(name: string, argv: string[], clearance: string[]): Record<string, unknown> {
  return {
    name,
    kind: 'exec',
    argv,
    cwd: tool,
    input: { text: { type: 'string', maxLength: 100, pattern: '[a-z ]*' } },
    riskClass: 'write_internal',
    sideEffectClass: 'internal_state_change',
    resultLabel: { integrity: ['ops'] },
    clearance,
  };
}

async function planWith(secretArgv: string[], publicArgv: string[]) {
  const profile = await yamlFile(scratch, 'profile', {
    extends: 'default',
    name: 'tool-state',
    cfc: { mode: 'enforce-explicit' },
    hostTools: [entry('secretnotes', secretArgv, ['secret']), entry('notes', publicArgv, [])],
  });
  return runIn(art, ['--profile', profile, '--workspace', ws, '--', 'true'], env);
}

describe('round 6: one script under two clearances, spelled apart', () => {
  it('control: two spellings of the script file are refused', async () => {
    const { r } = await planWith(
      ['python3', 'notes_server.py', '{text}'],
      ['python3', './notes_server.py', '{text}'],
    );
    expect(r.exitCode).toBe(125);
    expect(r.stderr).toContain('run the same command');
  });

  it('python3 -m notes_server and python3 notes_server.py share one state: refused', async () => {
    const { r } = await planWith(
      ['python3', '-m', 'notes_server', '{text}'],
      ['python3', 'notes_server.py', '{text}'],
    );
    expect(r.exitCode, r.stderr).toBe(125);
  });

  it("python3 notes (a directory's __main__.py) and python3 notes/__main__.py: refused", async () => {
    const { r } = await planWith(
      ['python3', 'notes', '{text}'],
      ['python3', 'notes/__main__.py', '{text}'],
    );
    expect(r.exitCode, r.stderr).toBe(125);
  });

  it('sh -c "exec python3 notes_server.py" and python3 notes_server.py: refused', async () => {
    const { r } = await planWith(
      ['sh', '-c', 'exec python3 notes_server.py "$1"', 'sh', '{text}'],
      ['python3', 'notes_server.py', '{text}'],
    );
    expect(r.exitCode, r.stderr).toBe(125);
  });
});
