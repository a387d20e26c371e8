// Round 7, the class "a client's session/open holds authority that is the operator's": a
// session's CFC mode is the operator's `cfh serve --cfc`, else the profile's, and a client
// may only raise it. Fails without session/open-floor.ts (the client's `disabled` opens a
// session that shows the secret to a model cleared for nothing).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('adv-round7-serve-open');

async function serve(
  name: string,
  cfcFlag: readonly string[],
  profileMode: string,
): Promise<ServeClient> {
  const repo = await scratch.sampleRepo();
  const secrets = scratch.path(`${name}-secrets`);
  await mkdir(secrets, { mode: 0o755 });
  await writeFile(path.join(secrets, 'token'), 'S3CRET-r7-open');
  const profile = await scratch.file(
    `${name}.yaml`,
    stringify({
      extends: 'default',
      name,
      tools: ['read_file'],
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc: { mode: profileMode, modelClearance: [] },
    }),
  );
  const script = await scratch.file(
    `${name}-script.yaml`,
    stringify({ turns: [{ text: 'hello' }] }),
  );
  return new ServeClient([
    '--profile',
    profile,
    '--workspace',
    repo,
    '--artifact-root',
    scratch.path(`${name}-art`),
    '--script',
    script,
    ...cfcFlag,
  ]);
}

describe("class: a client's session/open may raise the operator's CFC mode, never lower it", () => {
  it("refuses a mode below the operator's --cfc or the profile's, and opens a stronger one", async () => {
    const flagged = await serve('flagged', ['--cfc', 'enforce-strict'], 'enforce-explicit');
    for (const weaker of ['disabled', 'observe', 'enforce-explicit']) {
      const m = await flagged.request('session/open', { cfc: weaker });
      expect(m.error?.data?.code, JSON.stringify(m)).toBe('session_open_weakens');
      expect(m.error?.message).toBe(
        `session/open: cfc '${weaker}' is weaker than the operator's 'enforce-strict' (cfh serve --cfc)`,
      );
    }
    const same = await flagged.call('session/open', { cfc: 'enforce-strict' });
    await flagged.call('session/close', { sessionId: same.sessionId });
    expect(await flagged.end()).toBe(0);

    const byProfile = await serve('by-profile', [], 'enforce-explicit');
    const m = await byProfile.request('session/open', { cfc: 'observe' });
    expect(m.error?.data?.code).toBe('session_open_weakens');
    expect(m.error?.message).toContain(
      "than the operator's 'enforce-explicit' (cfh serve's profile)",
    );
    // Another profile the client names, whose own mode is weaker, is held to the same floor.
    const observing = await scratch.file(
      'observing.yaml',
      stringify({ extends: 'default', name: 'observing', cfc: { mode: 'observe' } }),
    );
    const named = await byProfile.request('session/open', { profile: observing });
    expect(named.error?.data?.code).toBe('session_open_weakens');
    // The workspace reaches the host no further than the operator's profile lets it.
    const rw = await byProfile.request('session/open', { workspaceMode: 'rw' });
    expect(rw.error?.data?.code).toBe('session_open_weakens');
    expect(rw.error?.message).toBe(
      "session/open: workspace mode 'rw' reaches further than the operator's 'ro' (cfh serve's profile)",
    );
    const stronger = await byProfile.call('session/open', { cfc: 'enforce-strict' });
    await byProfile.call('session/close', { sessionId: stronger.sessionId });
    expect(await byProfile.end()).toBe(0);
  }, 180_000);
});
