// Class 9, what a held configuration names as code to run (src/host-obeyed-named.ts): the
// program `.yarnrc.yml`'s yarnPath names, yarn's plugins and yarn 1's yarn-path, npm's
// script-shell and the modules node-options preloads, rustup's toolchain path; read from
// real files in a temp workspace; the apply gate holding them with the setting that names
// them (workspace/host-obeyed-gate.ts); the rw plan watching them, neither mounting them
// read-only nor refusing the run (sandbox/host-obeyed-mounts.ts).
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { namedHeldPaths } from '../../src/host-obeyed-named.js';
import { gateHostObeyed, readHostHeld } from '../../src/workspace/host-obeyed-gate.js';
import { holdHostObeyed } from '../../src/sandbox/host-obeyed-mounts.js';
import { identityOf } from '../../src/sandbox/mount-policy.js';
import type { PatchChange } from '../../src/workspace/patch.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { makeTempDir, removeTempDir } from './helpers.js';

let tmp: string | undefined;
let ws = '';
const never = new AbortController().signal;

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-obeyed-named-'));
  ws = path.join(tmp, 'ws');
  await mkdir(ws);
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

const put = (rel: string, text: string): Promise<void> => writeFile(path.join(ws, rel), text);

describe('class 9: the paths a held configuration names as code to run', () => {
  it('reads yarnPath and yarn plugins from .yarnrc.yml, yarn-path from .yarnrc', async () => {
    await put(
      '.yarnrc.yml',
      [
        'yarnPath: .yarn/releases/yarn-4.5.0.cjs',
        'plugins:',
        '  - path: .yarn/plugins/@yarnpkg/plugin-x.cjs',
        '    spec: x',
        '  - tools/plugin-y.js',
        'nodeLinker: node-modules',
        '',
      ].join('\n'),
    );
    await put('.yarnrc', 'yarn-path "./.yarn/releases/yarn-1.22.22.js"\n');
    expect(namedHeldPaths(ws)).toEqual([
      { path: '.yarn/plugins/@yarnpkg/plugin-x.cjs', why: 'yarn (plugins in .yarnrc.yml)' },
      { path: '.yarn/releases/yarn-1.22.22.js', why: 'yarn (yarn-path in .yarnrc)' },
      { path: '.yarn/releases/yarn-4.5.0.cjs', why: 'yarn (yarnPath in .yarnrc.yml)' },
      { path: 'tools/plugin-y.js', why: 'yarn (plugins in .yarnrc.yml)' },
    ]);
  });

  it("reads npm's script-shell and node-options preloads, rustup's toolchain path, mise's _.source", async () => {
    await put(
      '.npmrc',
      'registry=http://127.0.0.1:4873/\nscript-shell=./tools/sh\nnode-options="--require ./tools/pre.js --import=./tools/hook.mjs --max-old-space-size=4096"\n',
    );
    await put('rust-toolchain.toml', '[toolchain]\nchannel = "stable"\npath = "toolchains/rust"\n');
    await put('mise.toml', '[tools]\nnode = "24"\n[env]\n_.source = ["./env/a.sh", "env/b.sh"]\n');
    await put('.mise.local.toml', '[env._]\nsource = "./env/local.sh"\n');
    expect(namedHeldPaths(ws).map((p) => p.path)).toEqual([
      'env/a.sh',
      'env/b.sh',
      'env/local.sh',
      'toolchains/rust',
      'tools/hook.mjs',
      'tools/pre.js',
      'tools/sh',
    ]);
  });

  it('holds nothing for a bare command, a path outside, a file that does not parse, a FIFO', async () => {
    await put('.npmrc', 'script-shell=bash\nnode-options=--require tsx\n');
    await put('.yarnrc.yml', 'yarnPath: ../elsewhere/yarn.cjs\n');
    await put('rust-toolchain.toml', '[other]\npath = "x"\n');
    expect(namedHeldPaths(ws)).toEqual([]);
    await put('.yarnrc.yml', 'yarnPath: [unclosed\n');
    expect(namedHeldPaths(ws)).toEqual([]);
    // A FIFO where a configuration is looked for does not block the read.
    execFileSync('mkfifo', [path.join(ws, '.yarnrc')]);
    expect(namedHeldPaths(ws)).toEqual([]);
  });

  it('reads a configuration above the workspace for what it names inside', async () => {
    await writeFile(path.join(tmp ?? '', '.yarnrc.yml'), 'yarnPath: ws/bin/yarn.cjs\n');
    expect(namedHeldPaths(ws)).toEqual([
      { path: 'bin/yarn.cjs', why: `yarn (yarnPath in ${path.join(tmp ?? '', '.yarnrc.yml')})` },
    ]);
  });
});

const added = (p: string): PatchChange => ({
  path: p,
  kind: 'added',
  before: null,
  after: { type: 'file', mode: 0o644, size: 1, sha256: 'a'.repeat(64) },
  applicable: true,
});

describe('class 9: the apply gate and the rw plan hold them', () => {
  it('an apply holds the yarnPath program back until it is named', async () => {
    await put('.yarnrc.yml', 'yarnPath: .yarn/releases/yarn-4.5.0.cjs\n');
    const changes = [added('.yarn/releases/yarn-4.5.0.cjs'), added('src/a.ts')];
    const host = await readHostHeld(ws, never);
    const gate = gateHostObeyed('run-1', changes, [], host);
    expect(gate.heldBack).toEqual(['.yarn/releases/yarn-4.5.0.cjs']);
    expect(gate.changes[0]?.note).toMatch(/yarn \(yarnPath in \.yarnrc\.yml\)/);
    expect(
      gateHostObeyed('run-1', changes, ['.yarn/releases/yarn-4.5.0.cjs'], host).heldBack,
    ).toEqual([]);
  });

  it('an rw run watches it: no read-only mount over .yarn, no refusal', async () => {
    await put('.yarnrc.yml', 'yarnPath: .yarn/releases/yarn-4.5.0.cjs\n');
    await mkdir(path.join(ws, '.yarn', 'releases'), { recursive: true });
    await put('.yarn/releases/yarn-4.5.0.cjs', 'x\n');
    const rw: SpecMount = {
      source: ws,
      target: '/workspace',
      mode: 'rw',
      identity: identityOf(ws),
    };
    const plan = holdHostObeyed([rw], 'ro');
    expect(plan.mounts.map((m) => m.target)).toEqual(['/workspace/.yarnrc.yml']);
    expect(plan.repository).toEqual([{ source: ws, paths: ['.yarn/releases/yarn-4.5.0.cjs'] }]);
  });
});
