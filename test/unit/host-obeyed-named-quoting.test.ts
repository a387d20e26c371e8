// Class 9, a held configuration read as its tool parses it (src/host-obeyed-named-quoting.ts,
// the TOML strings of src/host-obeyed-named-toml.ts): a spelling the tool accepts names the
// same file to cfh. Checked against the tools themselves where they are here: npm's own `ini`
// (the one npm reads `.npmrc` with) and Node, run with each NODE_OPTIONS spelling to see which
// file it preloads.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { namedHeldPaths } from '../../src/host-obeyed-named.js';
import {
  iniUnsafe,
  nodeOptionsArgv,
  npmIni,
  shellWords,
} from '../../src/host-obeyed-named-quoting.js';
import { commandWords, preloads } from '../../src/host-obeyed-named-tools.js';
import { tomlStrings } from '../../src/host-obeyed-named-toml.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-quoting-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const put = async (rel: string, text: string): Promise<void> => {
  await mkdir(path.dirname(path.join(ws, rel)), { recursive: true });
  await writeFile(path.join(ws, rel), text);
};
const held = (): string[] => namedHeldPaths(ws).map((p) => p.path);

/** npm's own `ini`, beside the npm on PATH. */
function npmsIni(): { unsafe: (v: string) => unknown } | undefined {
  try {
    const npm = realpathSync(execFileSync('which', ['npm'], { encoding: 'utf8' }).trim());
    const file = path.join(path.dirname(npm), '..', 'node_modules', 'ini', 'lib', 'ini.js');
    return existsSync(file)
      ? (createRequire(import.meta.url)(file) as { unsafe: (v: string) => unknown })
      : undefined;
  } catch {
    return undefined;
  }
}

const NPM_VALUES = [
  '--require "./tools/pre.js"',
  '"--require ./tools/pre.js"',
  "'--require ./tools/pre.js'",
  '"--require \\"./tools/pre.js\\""',
  './tools/sh ; a comment',
  './tools/sh#x',
  './tools/a\\;b',
  '  ./tools/x  ',
  '"\\u002e/tools/x"',
  "'not json",
];

describe('class 9: a held configuration is read as its tool parses it', () => {
  const ini = npmsIni();
  it.runIf(ini !== undefined)(".npmrc values unquote as npm's own ini unquotes them", () => {
    for (const v of NPM_VALUES) expect(iniUnsafe(v), v).toEqual(ini?.unsafe(v));
  });

  it('.npmrc node-options: the quoted, = and -r spellings Node accepts are held', async () => {
    await put(
      '.npmrc',
      [
        'node-options=--require "./tools/pre.js"',
        'node_options = --import="./tools/imp.mjs" -r=tools/r.js --experimental_loader ./tools/l.mjs',
        "script-shell='./tools/my sh'",
        'git = ./tools/git ; the git npm runs',
      ].join('\n'),
    );
    expect(held()).toEqual(
      expect.arrayContaining([
        'tools/pre.js',
        'tools/imp.mjs',
        'tools/r.js',
        'tools/l.mjs',
        'tools/my sh',
        'tools/git',
      ]),
    );
    expect(npmIni('a=1\n  --require ./tools/c.js\n')).toContainEqual({
      key: 'a',
      value: '1 --require ./tools/c.js',
    });
  });

  it('NODE_OPTIONS splits as Node splits it: the file each spelling preloads is the one named', async () => {
    await mkdir(path.join(ws, 'tools'));
    const spellings = [
      '--require "./tools/pre one.js"',
      '--require=./tools/pre-two.js',
      '-r ./tools/pre-three.js',
      '--require "./tools/pre\\"four.js"',
      '--max-old-space-size=64 --require ./tools/pre-five.js',
    ];
    for (const s of spellings) {
      const file = path.join(ws, 'loaded');
      for (const name of ['pre one', 'pre-two', 'pre-three', 'pre"four', 'pre-five'])
        await writeFile(
          path.join(ws, 'tools', `${name}.js`),
          `require('fs').writeFileSync(${JSON.stringify(file)}, ${JSON.stringify(`./tools/${name}.js`)})`,
        );
      execFileSync(process.execPath, ['-e', '0'], {
        cwd: ws,
        env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: s },
      });
      const loaded = readFileSync(file, 'utf8');
      expect(preloads(s), s).toContain(loaded);
    }
    expect(nodeOptionsArgv('--require "./a b.js"')).toEqual({
      argv: ['--require', './a b.js'],
      ok: true,
    });
    // Node refuses an unterminated string; every word it could be is still named.
    expect(nodeOptionsArgv('--require "./tools/x.js').ok).toBe(false);
    expect(preloads('--require "./tools/x.js')).toContain('./tools/x.js');
  });

  it('TOML strings decode as TOML: escapes, literal and multi-line strings', async () => {
    expect(tomlStrings(String.raw`"tools\u002fbin"`)).toEqual(['tools/bin']);
    expect(tomlStrings(`"""\ntools/\\\n    bin"""`)).toEqual(['tools/bin']);
    expect(tomlStrings(`'''\ntools/b#in'''`)).toEqual(['tools/b#in']);
    await put(
      'mise.toml',
      [
        '[env]',
        String.raw`_.path = "tools\u002fbin"`,
        '_.source = """',
        './tools/env.sh"""',
        '[hooks]',
        "enter = '''",
        "./tools/enter.sh # not a comment'''",
      ].join('\n'),
    );
    expect(held()).toEqual(expect.arrayContaining(['tools/bin', 'tools/env.sh', 'tools/enter.sh']));
  });

  it("shell lines split as the shell splits them: escapes, $'...', quotes joined", () => {
    expect(shellWords(String.raw`sh ./my\ hook.sh "a"'b'c \./x $'./tools/\x79.sh'`)).toEqual([
      'sh',
      './my hook.sh',
      'abc',
      './x',
      './tools/y.sh',
    ]);
    expect(shellWords('echo "a\\"b" # ./not-run.sh')).toEqual(['echo', 'a"b']);
    expect(commandWords(String.raw`bash ./tools/a\ b.sh;./tools/c.sh`)).toEqual([
      './tools/a b.sh',
      './tools/c.sh',
    ]);
  });
});
