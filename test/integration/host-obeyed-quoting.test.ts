// Class 9, a held configuration read as its tool parses it (src/host-obeyed-named-quoting.ts):
// `.npmrc` `node-options=--require "./tools/pre.js"` is the spelling Node takes (it strips the
// quotes), so the next `npm run` on the host preloads tools/pre.js. A run that rewrites that
// file is held back from `runs apply --yes` (draft) and said in the end line (rw), as the
// unquoted spelling always was.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_UID, cfh, onlyRunDir, readEvents, useScratch } from './helpers.js';

const scratch = useScratch('obeyed-quoting');
const REAL = 'module.exports = {};\n';
const PLANT = `printf 'require("fs").writeFileSync("/tmp/pwned", "ran")\\n' > /workspace/tools/pre.js`;

async function npmProject(name: string): Promise<string> {
  const ws = scratch.path(name);
  await mkdir(path.join(ws, 'tools'), { recursive: true });
  await chmod(path.dirname(ws), 0o711);
  await writeFile(path.join(ws, 'tools', 'pre.js'), REAL);
  await writeFile(path.join(ws, '.npmrc'), 'node-options=--require "./tools/pre.js"\n');
  await writeFile(
    path.join(ws, 'package.json'),
    '{"name":"x","version":"1.0.0","scripts":{"hello":"node -e 0"}}\n',
  );
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', `${SANDBOX_UID}:${SANDBOX_UID}`, ws]);
  return ws;
}

const run = (ws: string, art: string, mode: string) =>
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
    ...(mode === 'draft' ? ['--json'] : []),
    '--',
    'sh',
    '-c',
    PLANT,
  ]);

describe('class 9: a held configuration is read as its tool parses it', () => {
  it('runs apply --yes holds back the preload a quoted .npmrc node-options names', async () => {
    const ws = await npmProject('draft-ws');
    const art = scratch.path('draft-art');
    const r = await run(ws, art, 'draft');
    expect(r.exitCode, r.stderr).toBe(0);
    const runId = (JSON.parse(r.stdout) as { runId: string }).runId;
    const apply = await cfh(['runs', 'apply', runId, '--yes', '--artifact-root', art]);
    expect(apply.stdout + apply.stderr).toMatch(/held back[^\n]*npm \(node-options in \.npmrc\)/);
    expect(await readFile(path.join(ws, 'tools', 'pre.js'), 'utf8')).toBe(REAL);
  });

  it('an rw run that rewrites the preload a quoted .npmrc node-options names says so', async () => {
    const ws = await npmProject('rw-ws');
    const art = scratch.path('rw-art');
    const r = await run(ws, art, 'rw');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /WARNING: the sandbox created or changed 1 path your tools obey \(tools\/pre\.js\)/,
    );
    const events = await readEvents(await onlyRunDir(art));
    const found = events.find((e) => e.type === 'host_obeyed_changed')?.data as
      { paths: { path: string }[] } | undefined;
    expect(found?.paths.map((p) => p.path)).toEqual(['tools/pre.js']);
  });
});
