// AH-INT-4: restoring a session validates every authority-bearing setting it was opened
// with. One session is opened, then each setting is changed alone (by a restore parameter,
// a flag of the restoring `cfh serve`, a profile layer or file edited on disk, or the
// environment) and the restore must be refused with session_restore_mismatch naming it,
// before any run exists; restored unchanged, the same session is accepted.
import { cp, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ownBySandbox, useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('restore-authority');
const TALK = 'turns:\n  - text: one\n  - text: two\n';

interface Opened {
  readonly sessionId: string;
  readonly root: string;
  /** The flags of `cfh serve` the session was opened with, by name. */
  readonly flags: Record<string, string[]>;
}

const argv = (flags: Record<string, string[]>): string[] => Object.values(flags).flat();

/** A restore in a fresh `cfh serve` with `flags`: its error's data, or undefined if accepted. */
async function restore(
  flags: Record<string, string[]>,
  params: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<{ code?: string; details?: Record<string, unknown> } | undefined> {
  const client = new ServeClient(argv(flags), env);
  try {
    const r = await client.request('session/restore', params);
    if (r.error === undefined) {
      await client.call('session/close', { sessionId: params['sessionId'] });
      return undefined;
    }
    return r.error.data ?? { code: r.error.message };
  } finally {
    expect(await client.end()).toBe(0);
  }
}

async function runCount(root: string): Promise<number> {
  return (await readdir(root)).filter((n) => /^\d{8}T/.test(n)).length;
}

describe('session/restore refuses each authority setting changed alone (AH-INT-4)', () => {
  let opened: Opened;
  let base: string;
  let data: string;

  beforeAll(async () => {
    const repo = await scratch.sampleRepo();
    data = scratch.path('data');
    await mkdir(data);
    await writeFile(path.join(data, 'note'), 'data\n');
    await ownBySandbox(data);
    base = await scratch.file('base.yaml', 'extends: untrusted-repo\nname: base\n');
    const top = await scratch.file('top.yaml', `extends: ${base}\nname: top\n`);
    const root = scratch.path('art');
    const flags = {
      profile: ['--profile', top],
      workspace: ['--workspace', repo],
      root: ['--artifact-root', root],
      script: ['--script', await scratch.file('talk.yaml', TALK)],
      mount: ['--mount', `${data}:/data:ro`],
    };
    const client = new ServeClient(argv(flags));
    const session = await client.call('session/open', {});
    const sessionId = String(session.sessionId);
    expect(await client.turn(sessionId, 'first')).toMatchObject({ status: 'answered' });
    await client.call('session/close', { sessionId });
    expect(await client.end()).toBe(0);
    opened = { sessionId, root, flags };
  });

  const refusedFor = async (
    fields: string[],
    change: { flags?: Record<string, string[]>; params?: Record<string, unknown> },
    env: Record<string, string> = {},
  ): Promise<void> => {
    const before = await runCount(opened.root);
    const data = await restore(
      { ...opened.flags, ...change.flags },
      { sessionId: opened.sessionId, ...change.params },
      env,
    );
    expect(data).toMatchObject({ code: 'session_restore_mismatch' });
    expect(data?.details?.['fields']).toEqual(expect.arrayContaining(fields));
    // Refused before anything exists: no run directory.
    expect(await runCount(opened.root)).toBe(before);
  };

  it('another workspace directory, or the same one in another mode', async () => {
    const other = await scratch.sampleRepo();
    await refusedFor(['workspace'], { params: { workspace: other } });
    // The mode is the workspace mount's: named with the mounts.
    await refusedFor(['mounts'], { params: { workspaceMode: 'ro' } });
  });

  it('another profile, a profile layer with another policy, another model', async () => {
    const same = await scratch.file('other.yaml', `extends: ${base}\nname: other\n`);
    await refusedFor(['profile'], { params: { profile: same } });
    // The layer below the named profile, edited on disk: the same file names, another policy.
    await writeFile(
      base,
      'extends: untrusted-repo\nname: base\npolicy:\n  - { id: allow-all-exec, match: { tool: exec }, decision: allow, reason: widened }\n',
    );
    try {
      await refusedFor(['policy'], {});
    } finally {
      await writeFile(base, 'extends: untrusted-repo\nname: base\n');
    }
    const script = await scratch.file('talk-elsewhere.yaml', TALK);
    await refusedFor(['model'], { flags: { script: ['--script', script] } });
  });

  it('another mount source, or another directory at the mount source path', async () => {
    const other = scratch.path('data-other');
    await cp(data, other, { recursive: true });
    await ownBySandbox(other);
    await refusedFor(['mounts'], { flags: { mount: ['--mount', `${other}:/data:ro`] } });
    await refusedFor(['mounts'], { flags: { mount: ['--mount', `${data}:/data:rw`] } });
    // The same path, another directory behind it.
    await rename(data, `${data}-moved`);
    await rename(other, data);
    try {
      await refusedFor(['mounts'], {});
    } finally {
      await rename(data, other);
      await rename(`${data}-moved`, data);
    }
  });

  it('another network posture, CFC mode, planning mode or session-wide approval', async () => {
    await refusedFor(['network'], {
      flags: { network: ['--network', 'allowlist', '--allow', '127.0.0.1'] },
    });
    await refusedFor(['cfc'], { params: { cfc: 'observe' } });
    await refusedFor(['mode'], { params: { mode: 'plan' } });
    await refusedFor(['approvals'], { params: { approve: ['default:process_execution'] } });
  });

  it('the same model route under another credential', async () => {
    const { startMessagesApiServer, okText } = await import('../fixtures/messages-api-server.js');
    const server = await startMessagesApiServer();
    try {
      server.enqueue(okText('one'));
      const root = scratch.path('art-anthropic');
      const flags = {
        workspace: ['--workspace', await scratch.sampleRepo()],
        root: ['--artifact-root', root],
        provider: ['--provider', 'anthropic'],
      };
      const env = (key: string) => ({
        ANTHROPIC_API_KEY: key,
        ANTHROPIC_BASE_URL: server.baseURL,
        CFH_MODEL: 'claude-test',
      });
      const client = new ServeClient(argv(flags), env('sk-test-owner-one-5e1f'));
      const sessionId = String((await client.call('session/open', {})).sessionId);
      expect(await client.turn(sessionId, 'first')).toMatchObject({ status: 'answered' });
      await client.call('session/close', { sessionId });
      expect(await client.end()).toBe(0);
      const before = await runCount(root);
      const data = await restore(flags, { sessionId }, env('sk-test-owner-two-77a0'));
      expect(data).toMatchObject({
        code: 'session_restore_mismatch',
        details: { fields: ['model'] },
      });
      expect(await runCount(root)).toBe(before);
      expect(await restore(flags, { sessionId }, env('sk-test-owner-one-5e1f'))).toBeUndefined();
    } finally {
      await server.close();
    }
  });

  it('restored with nothing changed, the same session is accepted', async () => {
    expect(await restore(opened.flags, { sessionId: opened.sessionId })).toBeUndefined();
  });
});
