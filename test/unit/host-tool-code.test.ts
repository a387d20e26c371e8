// Class: code that can run another entry's code is judged as its interpreter would resolve it,
// or, where cfh cannot resolve it, fails closed (engine/cfc/host-tool-code.ts,
// host-tool-sharing.ts; AH-CFC-2, AH-CFC-12). Inline code and script files (read in full)
// name the other entry's script by a package directory, `-m`/`-mMOD`, a command on PATH or
// a wrapper script: one state. `cd`, variables, globs, eval and a model-named script: refused.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Profile } from '../../src/config/profile-schema.js';
import { loadProfile } from '../../src/config/profile-loader.js';
import { codeNames } from '../../src/engine/cfc/host-tool-code.js';
import { checkHostToolSharing } from '../../src/engine/cfc/host-tool-sharing.js';

let dir: string;
const at = (...p: string[]): string => path.join(dir, ...p);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-unit-code-'));
  await mkdir(at('tools', 'rt7notes'), { recursive: true });
  await mkdir(at('bin'));
  await writeFile(at('tools', 'rt7notes', '__main__.py'), 'print(1)\n');
  await writeFile(at('tools', 'kv.py'), 'print(2)\n');
  await writeFile(at('tools', 'other.py'), 'print(3)\n');
  await writeFile(at('tools', 'recall.sh'), '#!/bin/sh\nexec python3 kv.py get\n');
  await chmod(at('tools', 'recall.sh'), 0o755);
  await writeFile(at('tools', 'plain.sh'), '#!/bin/sh\nexec python3 other.py "$@"\n');
  await writeFile(at('tools', 'recall.py'), 'import runpy\nrunpy.run_path("kv.py")\n');
  await writeFile(at('bin', 'rt7-notes'), '#!/bin/sh\necho notes\n');
  await chmod(at('bin', 'rt7-notes'), 0o755);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function tool(name: string, argv: string[], clearance: string[]) {
  return {
    name,
    kind: 'exec',
    argv,
    cwd: at('tools'),
    input: {},
    riskClass: 'read_only',
    sideEffectClass: 'none',
    resultLabel: { integrity: ['ops'] },
    clearance,
  };
}

/** The sharing check over `secretArgv` (cleared for secret) and `publicArgv` (for nothing). */
function check(secretArgv: string[], publicArgv: string[]): () => void {
  const profile = Profile.parse({
    ...loadProfile('default').profile,
    hostTools: [tool('stash', secretArgv, ['secret']), tool('recall', publicArgv, [])],
  });
  return () => {
    checkHostToolSharing(profile, 0, `${at('bin')}:/usr/bin:/bin`);
  };
}

const KV = ['python3', 'kv.py'];

describe('class: code that can run another entry code is judged as its interpreter resolves it', () => {
  it('refuses inline code naming the other script by a package directory or -m/-mMOD', () => {
    expect(check(['python3', 'rt7notes'], ['sh', '-c', 'exec python3 rt7notes get'])).toThrow(
      /the code of 'sh' names 'rt7notes', which is '.*rt7notes\/__main__\.py', the code the other runs/,
    );
    expect(check(['python3', '-m', 'kv'], ['sh', '-c', 'exec python3 -mkv get'])).toThrow(
      /names 'kv', which is '.*kv\.py'/,
    );
    expect(check(KV, ['python3', '-c', 'import runpy; runpy.run_module("kv")'])).toThrow(
      /the code of 'python3' names 'kv'/,
    );
  });

  it('refuses inline code naming the other program as a command found on PATH', () => {
    expect(check(['rt7-notes'], ['sh', '-c', 'rt7-notes get'])).toThrow(
      /names 'rt7-notes', which is '.*bin\/rt7-notes'/,
    );
  });

  it('reads a wrapper script file, and a script an interpreter is handed, in full', () => {
    expect(check(KV, ['sh', 'recall.sh'])).toThrow(/the code of 'sh' names 'kv\.py'/);
    expect(check(KV, ['./recall.sh'])).toThrow(/the code of '\.\/recall\.sh' names 'kv\.py'/);
    expect(check(KV, ['python3', 'recall.py'])).toThrow(/the code of 'python3' names 'kv\.py'/);
  });

  it('fails closed on code cfh cannot resolve: cd, variables, globs, eval, a model-named script', () => {
    const why = /cfh cannot tell what '.*' runs \((.*)\), so it may run the other's/;
    expect(check(KV, ['sh', '-c', `cd ${at('tools')} && exec python3 get`])).toThrow(why);
    expect(check(KV, ['sh', '-c', 'exec python3 "$NOTES" get'])).toThrow(
      /cfh cannot resolve '\$NOTES' \(its environment does not set NOTES\)/,
    );
    expect(check(KV, ['sh', '-c', 'exec python3 "$(echo kv.py)" get'])).toThrow(why);
    expect(check(KV, ['sh', '-c', 'exec python3 k?.py get'])).toThrow(why);
    expect(check(KV, ['sh', '-c', 'eval "python3 kv.py"'])).toThrow(why);
    expect(check(KV, ['python3', '-c', 'exec(open("k" + "v.py").read())'])).toThrow(why);
    const chosen = {
      ...tool('recall', ['python3', '{script}'], []),
      input: {
        script: { type: 'string', maxLength: 20, pattern: '[a-z.]+' },
      },
    };
    const profile = Profile.parse({
      ...loadProfile('default').profile,
      hostTools: [tool('stash', KV, ['secret']), chosen],
    });
    expect(() => {
      checkHostToolSharing(profile, 0, '/usr/bin:/bin');
    }).toThrow(/the model names the script it runs/);
  });

  it('lets code that names none of the other code be: benign host tools keep working', () => {
    expect(check(KV, ['python3', 'other.py'])).not.toThrow();
    expect(check(KV, ['sh', 'plain.sh'])).not.toThrow();
    expect(check(KV, ['sh', '-c', 'exec python3 other.py "$1"', 'sh'])).not.toThrow();
    expect(check(KV, ['python3', '-c', 'print(1)'])).not.toThrow();
    // One clearance in the whole tree: nothing to launder, nothing is read.
    const one = Profile.parse({
      ...loadProfile('default').profile,
      hostTools: [tool('a', KV, ['secret']), tool('b', ['sh', '-c', 'cd / && ls'], ['secret'])],
    });
    expect(() => {
      checkHostToolSharing(one, 0, '/usr/bin:/bin');
    }).not.toThrow();
  });

  it('resolves words as files, modules, package directories and PATH commands', () => {
    const names = codeNames({ text: 'exec python3 -mkv rt7notes other.py', shell: true }, true, {
      cwd: at('tools'),
      env: {},
      searchPath: '/usr/bin:/bin',
    });
    expect(names.unresolved).toBeUndefined();
    expect(names.files.map((f) => path.basename(f.real)).sort()).toEqual([
      '__main__.py',
      'kv.py',
      'other.py',
    ]);
    expect(names.dirs).toEqual([at('tools', 'rt7notes')]);
    expect(names.commands.length).toBeGreaterThan(0);
  });
});
