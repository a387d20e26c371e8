// Class 9, a family's file names come from its tool's own list (src/host-obeyed.ts): mise
// reads `mise/config.toml`, `mise.<env>.toml` and `.rtx.toml` as it reads `.mise/config.toml`
// (jdx/mise src/config/mod.rs); a `[hooks] enter` there runs on entering the directory. A
// draft that plants them is held back from `runs apply --yes`; an rw run that does is said.
import { execFileSync } from 'node:child_process';
import { access, chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, useScratch } from './helpers.js';

const scratch = useScratch('obeyed-tool-lists');
const FILES = ['mise/config.toml', 'mise.production.toml', '.rtx.toml'];
const PLANT = [
  'mkdir -p mise',
  ...FILES.map((f) => `printf '[hooks]\\nenter = "touch /tmp/pwned"\\n' > ${f}`),
  "printf 'work\\n' > work.txt",
].join(' && ');

const exists = (f: string): Promise<boolean> =>
  access(f).then(
    () => true,
    () => false,
  );

async function project(name: string): Promise<string> {
  const ws = scratch.path(name);
  await mkdir(ws, { recursive: true });
  await chmod(path.dirname(ws), 0o711);
  await writeFile(path.join(ws, 'README.md'), 'hi\n');
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

const run = (ws: string, art: string, mode: string, json: boolean) =>
  cfh([
    'sandbox',
    'run',
    '--profile',
    'untrusted-repo',
    '--workspace-mode',
    mode,
    '--workspace',
    ws,
    '--artifact-root',
    art,
    ...(json ? ['--json'] : []),
    '--',
    'sh',
    '-c',
    PLANT,
  ]);

describe("class 9: a family's file names come from its tool's own list", () => {
  it("runs apply --yes holds back mise's mise/config.toml, mise.<env>.toml and .rtx.toml", async () => {
    const ws = await project('draft-ws');
    const art = scratch.path('draft-art');
    const r = await run(ws, art, 'draft', true);
    expect(r.exitCode, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const apply = await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(await exists(path.join(ws, 'work.txt'))).toBe(true);
    for (const f of FILES) expect(await exists(path.join(ws, f)), f).toBe(false);
  });

  it("an rw run that plants mise's mise/config.toml, mise.<env>.toml and .rtx.toml says so", async () => {
    const ws = await project('rw-ws');
    const r = await run(ws, scratch.path('rw-art'), 'rw', false);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /WARNING: the sandbox created or changed 3 paths your tools obey \(\.rtx\.toml, mise\/config\.toml, mise\.production\.toml\)/,
    );
  });
});
