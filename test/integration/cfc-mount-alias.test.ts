// A mount target through a link of the image (file-helper.ts, CFC design 8, AH-CFC-2): the
// engine mounts it where the link leads, so the file helper matches a real path against
// where each mount really is and refuses a path that reaches a mount by a name other than
// its target. Both link styles of the sandbox image: absolute (/var/run -> /run) and
// relative (/var/spool/mail -> ../mail). The target as written still reads, labelled by its mount
// (opaque to a model not cleared for it), and so does a grep started at the link.
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import {
  modelResults,
  profile,
  script,
  scriptedRun,
  secretDir,
  transcriptText,
} from './adv-round3-support.js';

const scratch = useScratch('cfc-mount-alias');
const SECRET = 'mount-alias-secret-4Rk8';

/** The model's view of `calls`, one a turn, with a secret mounted at `target`. */
async function run(target: string, calls: { name: string; input: unknown }[]): Promise<string[]> {
  const secrets = await secretDir(scratch, { token: SECRET });
  const p = await profile(scratch, {
    tools: ['read_file', 'list_dir', 'grep'],
    workspace: { mode: 'ro', label: { integrity: ['repo'] } },
    cfc: { mode: 'enforce-explicit', modelClearance: [] },
    mounts: [{ source: secrets, target, mode: 'ro', label: { confidentiality: ['secret'] } }],
  });
  const s = await script(
    scratch,
    calls.map((c) => [c]),
  );
  const { r, dir } = await scriptedRun(scratch, { profile: p, script: s });
  expect(r.exitCode, r.stderr).toBe(0);
  expect(await transcriptText(dir)).not.toContain(SECRET);
  const results = await modelResults(dir);
  expect(results).toHaveLength(calls.length);
  return results;
}

describe('a mount target through a link of the image', () => {
  it.each([
    ['absolute', '/var/run/secrets', '/run/secrets'],
    ['relative', '/var/spool/mail/secrets', '/var/mail/secrets'],
  ])('%s: %s reads as its mount, %s is refused', async (_style, target, alias) => {
    const [named, read, list, grep] = await run(target, [
      { name: 'read_file', input: { path: `${target}/token` } },
      { name: 'read_file', input: { path: `${alias}/token` } },
      { name: 'list_dir', input: { path: alias } },
      { name: 'grep', input: { pattern: 'secret', path: alias } },
    ]);
    expect(named).toMatch(/cfh-val:/);
    for (const r of [read, list, grep]) expect(r).toMatch(/mount_boundary/);
  });

  it('a grep reaching the mount by its real place is refused; by the link, labelled', async () => {
    const [real, link] = await run('/var/run/secrets', [
      { name: 'grep', input: { pattern: 'secret', path: '/run' } },
      { name: 'grep', input: { pattern: 'secret', path: '/var/run' } },
    ]);
    expect(real).toMatch(/mount_boundary.*reaches the mount \/var\/run\/secrets/);
    expect(link).toMatch(/cfh-val:/);
  });
});
