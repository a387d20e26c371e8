// A host tool's script found as its interpreter finds it (engine/cfc/host-tool-script.ts,
// host-tool-interpreters.ts), and code cfh cannot resolve to a file taken for any entry in the
// same real cwd (host-tool-sharing.ts): one state, one clearance, whatever the spelling.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { checkHostToolSharing } from '../../src/engine/cfc/host-tool-sharing.js';

const NODE = process.execPath;
let dir: string;
const at = (...p: string[]): string => path.join(dir, ...p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-script-'));
  for (const d of ['tools', 'work', 'tools/notes', 'tools/pkg/lib', 'tools/plain'])
    await mkdir(at(d), { recursive: true });
  for (const f of ['notes_server.py', 'other.py', 'notes/__main__.py', 'store.mjs', 'other.mjs'])
    await writeFile(at('tools', f), '');
  await writeFile(at('tools', 'pkg', 'package.json'), JSON.stringify({ main: 'lib/main.js' }));
  await writeFile(at('tools', 'pkg', 'lib', 'main.js'), '');
  await writeFile(at('tools', 'plain', 'index.js'), '');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function tool(name: string, argv: string[], fields: Record<string, unknown> = {}) {
  return {
    name,
    kind: 'exec',
    argv: [...argv, '{op}'],
    cwd: at('tools'),
    input: { op: { type: 'string', pattern: 'get|put' } },
    riskClass: 'write_local',
    sideEffectClass: 'local_artifact',
    resourceScope: 'project',
    resultLabel: { integrity: ['ops'] },
    ...fields,
  };
}

const SECRET = { clearance: ['secret'] };

/** The check over `a` and `b` (cleared for `secret`), `b` running in `cwd`. */
function check(a: string[], b: string[], fields: Record<string, unknown> = {}): () => void {
  const profile = Profile.parse({
    ...loadProfile('default').profile,
    hostTools: [tool('a', a, fields), tool('b', b, SECRET)],
  });
  return () => {
    checkHostToolSharing(profile, 0, '/usr/bin:/bin');
  };
}

const PY = ['python3', 'notes_server.py'];

describe('python finds its script', () => {
  it('refuses -m MODULE and the module file, and tells other modules apart', () => {
    expect(check(['python3', '-m', 'notes_server'], PY)).toThrow(
      `one script, '${at('tools', 'notes_server.py')}' (given as '-m notes_server' and 'notes_server.py')`,
    );
    expect(check(['python3', '-u', '-mnotes_server'], PY)).toThrow(/one script/);
    expect(check(['python3', '-m', 'other'], PY)).not.toThrow();
  });

  it('refuses -m PACKAGE and its __main__.py, and a module found on PYTHONPATH', () => {
    expect(check(['python3', '-m', 'notes'], ['python3', 'notes/__main__.py'])).toThrow(
      /one script/,
    );
    const onPath = { cwd: at('work'), env: { PYTHONPATH: { value: '../tools' } } };
    expect(check(['python3', '-m', 'notes_server'], PY, onPath)).toThrow(/one script/);
  });

  it('refuses a directory operand and its __main__.py', () => {
    expect(check(['python3', 'notes'], ['python3', at('tools', 'notes', '__main__.py')])).toThrow(
      /one script/,
    );
  });
});

describe('node finds its script', () => {
  it('refuses a directory (its package.json main, or index.js) and that file', () => {
    expect(check([NODE, 'pkg'], [NODE, 'pkg/lib/main.js'])).toThrow(/one script/);
    expect(check([NODE, './plain'], [NODE, 'plain/index.js'])).toThrow(/one script/);
  });

  it('refuses a script named without its extension', () => {
    expect(check([NODE, 'store'], [NODE, './store.mjs'])).toThrow(/one script/);
    expect(check([NODE, 'other'], [NODE, './store.mjs'])).not.toThrow();
  });
});

describe('code cfh cannot resolve to a file', () => {
  const SH = ['sh', '-c', 'exec python3 notes_server.py "$1"', 'sh'];

  it('refuses inline code or a wrapper naming the script of the other entry, saying why', () => {
    expect(check(SH, PY)).toThrow(
      `may run the same code: the code of 'sh' names 'notes_server.py', which is '${at('tools', 'notes_server.py')}', the code the other runs`,
    );
    expect(check(['python3', '-c', 'runpy.run_path("notes_server.py")'], PY)).toThrow(
      /the code of 'python3' names 'notes_server\.py'/,
    );
    expect(check(['env', 'python3', 'notes_server.py'], PY)).not.toThrow(/inline/);
    expect(check(['npx', 'tsx', 'notes_server.py'], PY)).toThrow(/notes_server\.py/);
  });

  it('lets other inline code, stdin and a module off its path be', () => {
    // Other code: its state is its own, as two different scripts' are.
    expect(check(['python3', '-c', 'print(1)'], PY)).not.toThrow();
    expect(check([NODE, '-e', '1'], [NODE, 'store.mjs'])).not.toThrow();
    expect(check(['perl', '-ne', '1'], PY)).not.toThrow();
    expect(check(['python3', '-'], PY)).not.toThrow();
    expect(check(['python3', '-m', 'http.server'], PY)).not.toThrow();
    // Naming the script from another cwd names the same file.
    expect(
      check(['sh', '-c', `exec python3 ${at('tools', 'notes_server.py')}`], PY, {
        cwd: at('work'),
      }),
    ).toThrow(/the code of 'sh' names/);
  });
});
