// Class 9, what a held configuration names as code to run, by key family
// (src/host-obeyed-named.ts and its readers): every key of a listed configuration whose value
// can be a program, a script, a module it loads, a hook or a PATH entry is read, from real
// files in a temp workspace, and what it names inside the workspace is held.
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { namedHeldPaths } from '../../src/host-obeyed-named.js';
import { tomlEntries } from '../../src/host-obeyed-named-toml.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-keys-'));
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

describe('class 9: npm and pnpm keys that name a program, a preload, a hooks file', () => {
  it('.npmrc: pnpmfile, global-pnpmfile, git, shell, editor, init-module, config files, prefix', async () => {
    await put(
      '.npmrc',
      [
        'pnpmfile=config/hooks.cjs',
        'global-pnpmfile=./config/global.cjs',
        'git=./tools/git',
        'shell=tools/sh -l',
        'script-shell=./tools/script-sh',
        'editor="./tools/ed --wait"',
        'browser=./tools/open',
        'viewer=./tools/view',
        'init-module=./tools/init.js',
        'onload-script=./tools/onload.js',
        'globalconfig=./etc/npmrc',
        'userconfig=./etc/user-npmrc',
        'prefix=./.npm-global',
        'registry=https://registry.example/',
        'cache=~/.npm',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      '.npm-global',
      'config/global.cjs',
      'config/hooks.cjs',
      'etc/npmrc',
      'etc/user-npmrc',
      'tools/ed',
      // npm spawns some of these whole, spaces and all: the whole value is read too.
      'tools/ed --wait',
      'tools/git',
      'tools/init.js',
      'tools/onload.js',
      'tools/open',
      'tools/script-sh',
      'tools/sh',
      'tools/sh -l',
      'tools/view',
    ]);
  });

  it('node-options: every flag that loads code or settings (--require, --import, --env-file ...)', async () => {
    await put(
      '.npmrc',
      'node-options="-r ./a.js --import=./b.mjs --loader ./c.mjs --env-file=./.env.node --env-file-if-exists ./d.env --experimental-config-file=./node.config.json --openssl-config ./ssl.cnf --max-old-space-size=4096"\n',
    );
    expect(held()).toEqual([
      '.env.node',
      'a.js',
      'b.mjs',
      'c.mjs',
      'd.env',
      'node.config.json',
      'ssl.cnf',
    ]);
  });

  it('pnpm-workspace.yaml: pnpmfile, globalPnpmfile, scriptShell, nodeOptions', async () => {
    await put(
      'pnpm-workspace.yaml',
      'packages:\n  - pkgs/*\npnpmfile: config/p.cjs\nglobalPnpmfile: ./config/g.cjs\nscriptShell: ./tools/sh\nnodeOptions: --require ./pre.js\n',
    );
    expect(held()).toEqual(['config/g.cjs', 'config/p.cjs', 'pre.js', 'tools/sh']);
  });

  it('yarn: injectEnvironmentFiles (berry), script-shell (yarn 1)', async () => {
    await put('.yarnrc.yml', 'injectEnvironmentFiles:\n  - .env.ci\n  - ./env/local?\n');
    await put('.yarnrc', 'script-shell "./tools/ysh"\n');
    expect(held()).toEqual(['.env.ci', 'env/local', 'tools/ysh']);
  });
});

describe('class 9: mise and asdf keys that name a PATH entry, a script, a hook', () => {
  it('every directive under env._: path, source, file, python.venv, in each TOML form', async () => {
    await put(
      'mise.toml',
      [
        '[env]',
        '_.path = ["./bin", "{{config_root}}/tools/bin", "$HOME/bin", "~/bin"]',
        '_.source = { path = "./env/src.sh", redact = true }',
        '_.file = [',
        '  ".env.mise",',
        ']',
        '[env._.python]',
        'venv = { path = ".venv", create = true }',
        '',
      ].join('\n'),
    );
    await put('.mise.local.toml', '[env._]\npath = "local/bin"\n');
    expect(held()).toEqual(['.env.mise', '.venv', 'bin', 'env/src.sh', 'local/bin', 'tools/bin']);
  });

  it('[env] variables that load code: PATH, NODE_OPTIONS, LD_PRELOAD, BASH_ENV', async () => {
    await put(
      'mise.toml',
      '[env]\nPATH = "./p1:./p2"\nNODE_OPTIONS = "--require ./pre.cjs"\nLD_PRELOAD = "./lib/x.so"\nBASH_ENV = "./env.sh"\n',
    );
    // `p1:./p2` too: a word split at `:` is a candidate whole (a file may have `:` in its name).
    expect(held()).toEqual(['env.sh', 'lib/x.so', 'p1', 'p1:./p2', 'p2', 'pre.cjs']);
  });

  it('[env]: every variable whose value has a path word, whatever its name', async () => {
    await put(
      'mise.toml',
      [
        '[env]',
        'GIT_EXTERNAL_DIFF = "tools/diff"',
        'GIT_SSH_COMMAND = "tools/ssh -o BatchMode=yes"',
        'RUSTC_WRAPPER = "{{config_root}}/tools/wrap"',
        'JAVA_TOOL_OPTIONS = "-Xmx1g -javaagent:tools/agent.jar=opt"',
        'MY_TOOL = "--plugin=./tools/plug.so"',
        'PYTHONPATH = "lib/py:/usr/lib/py"',
        'PROJECT_ROOT = "{{config_root}}"',
        'HERE = "{{config_root}}/"',
        'GREETING = "hello world"',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      'lib/py',
      'lib/py:/usr/lib/py',
      'tools/agent.jar',
      'tools/agent.jar=opt',
      'tools/diff',
      'tools/plug.so',
      'tools/ssh',
      'tools/wrap',
    ]);
  });

  it('[env]: a value naming the whole workspace, from a file above it, holds nothing', async () => {
    await writeFile(
      path.join(path.dirname(ws), 'mise.toml'),
      '[env]\nROOT = "./ws/"\nT = "ws/t"\n',
    );
    expect(held()).toEqual(['t']);
  });

  it('[hooks]: the path words of each command, and the tasks a hook runs by name', async () => {
    await put(
      'mise.toml',
      [
        '[hooks]',
        'enter = "bash ./hooks/enter.sh --quiet"',
        'cd = ["echo hi", "./hooks/cd.sh"]',
        'leave = { task = "bye" }',
        '[[hooks.postinstall]]',
        'script = ". ./hooks/post.sh"',
        '[tasks.bye]',
        'run = "node scripts/bye.js"',
        '[tasks.build]',
        'run = "./scripts/build.sh"',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      // mise's file task directories, its own list (each held under `.config`, `.mise` too).
      '.config/mise/tasks/bye',
      '.mise-tasks/bye',
      '.mise/tasks/bye',
      'hooks/cd.sh',
      'hooks/enter.sh',
      'hooks/post.sh',
      'mise-tasks/bye',
      'mise/tasks/bye',
      'scripts/bye.js',
    ]);
  });

  it('a tool version path: (mise [tools], asdf .tool-versions)', async () => {
    await put('mise.toml', '[tools]\nnode = "path:./vendor/node"\npython = "3.12"\n');
    await put('.tool-versions', 'ruby path:./vendor/ruby\nnodejs 20.1.0\n');
    expect(held()).toEqual(['vendor/node', 'vendor/ruby']);
  });
});

describe('class 9: cargo, rustup and bun keys that name a program', () => {
  it('.cargo/config.toml: wrappers, rustc, runner, linker, credential providers, paths', async () => {
    await put(
      '.cargo/config.toml',
      [
        '[build]',
        'rustc-wrapper = "./tools/wrap"',
        'rustc = "tools/rustc"',
        "[target.'cfg(unix)']",
        'runner = ["./tools/run", "--flag"]',
        '[target.x86_64-unknown-linux-gnu]',
        'linker = "./tools/cc"',
        '[registry]',
        'credential-provider = "./tools/cred --account x"',
        '[credential-alias]',
        'mine = ["./tools/alias-cred"]',
        'paths = ["./patched/serde"]',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      'patched/serde',
      'tools/alias-cred',
      'tools/cc',
      'tools/cred',
      'tools/run',
      'tools/rustc',
      'tools/wrap',
    ]);
  });

  it('.cargo/config.toml: the programs and code rustflags and rustdocflags name, doc.browser', async () => {
    await put(
      '.cargo/config.toml',
      [
        '[build]',
        'rustflags = ["-C", "linker=tools/ld", "-Zcodegen-backend=tools/cg.so"]',
        'rustdocflags = "--codegen linker=tools/doc-ld @tools/args"',
        '[target.x86_64-unknown-linux-gnu]',
        'rustflags = ["-Clinker=tools/ld2", "-Clink-arg=-fuse-ld=tools/mold"]',
        "[target.'cfg(unix)']",
        'rustflags = ["--codegen=linker=tools/ld3", "-Clink-args=-Wl,-rpath,tools/lib"]',
        '[host]',
        'rustflags = ["-Z", "llvm-plugins=tools/plugin.so", "--extern", "m=tools/libm.so"]',
        '[doc]',
        'browser = ["tools/browser", "--new-window"]',
        '[patch.crates-io]',
        'serde = { path = "patched/serde" }',
        '[patch.crates-io.log]',
        'path = "patched/log"',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual([
      '-Wl,-rpath,tools/lib',
      '@tools/args',
      'patched/log',
      'patched/serde',
      'tools/args',
      'tools/browser',
      'tools/cg.so',
      'tools/doc-ld',
      'tools/ld',
      'tools/ld2',
      'tools/ld3',
      'tools/lib',
      'tools/libm.so',
      'tools/mold',
      'tools/plugin.so',
    ]);
  });

  it('.cargo/config.toml [env]: every variable whose value has a path word, each form', async () => {
    await put(
      '.cargo/config.toml',
      [
        '[env]',
        'RUSTC_WRAPPER = "tools/wrap"',
        'CC = { value = "tools/cc", force = true, relative = true }',
        'OPENSSL_DIR = "/usr"',
        '[env.LD_PRELOAD]',
        'value = "tools/pre.so"',
        '',
      ].join('\n'),
    );
    expect(held()).toEqual(['tools/cc', 'tools/pre.so', 'tools/wrap']);
  });

  it('bunfig.toml: preload, [test] preload, [run] shell', async () => {
    await put(
      'bunfig.toml',
      'preload = ["./setup.ts"]\n[test]\npreload = "./test-setup.ts"\n[run]\nshell = "./tools/bsh"\n',
    );
    expect(held()).toEqual(['setup.ts', 'test-setup.ts', 'tools/bsh']);
  });
});

describe('class 9: the TOML shapes the readers take', () => {
  it('keys under headers, dotted and quoted keys, values over several lines, comments', () => {
    const entries = tomlEntries(
      [
        'top = "a" # a comment',
        '[tasks."build.all"]',
        'run = [',
        '  "x", # one',
        '  "y#z",',
        ']',
        "[env]\n_.path = 'p'",
        '',
      ].join('\n'),
    );
    expect(entries.map((e) => [e.key, e.parts])).toEqual([
      ['top', ['top']],
      ['tasks.build.all.run', ['tasks', 'build.all', 'run']],
      ['env._.path', ['env', '_', 'path']],
    ]);
    expect(entries[1]?.raw).toContain('"y#z"');
  });
});
