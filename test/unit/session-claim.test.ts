import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimSession, sessionClaimPath } from '../../src/session/session-claim.js';

const ID = '20261207T112233Z-0123abcd';
let root: string | undefined;
afterEach(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

describe('claimSession', () => {
  it('a second claim on a held session is refused session_live_elsewhere; free again once released', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'cfh-claim-'));
    const release = await claimSession(root, ID);
    await expect(claimSession(root, ID)).rejects.toMatchObject({ code: 'session_live_elsewhere' });
    await release();
    await release(); // idempotent
    const again = await claimSession(root, ID);
    await again();
  });

  it('two claims made at once: exactly one holds', async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'cfh-claim-'));
    const both = await Promise.allSettled([claimSession(root, ID), claimSession(root, ID)]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of both) if (r.status === 'fulfilled') await r.value();
  });

  it('a name that is no session id names no file', () => {
    expect(sessionClaimPath('/r', '../../etc')).toBeUndefined();
    expect(sessionClaimPath('/r', ID)).toBe(`/r/.session-${ID}.lock`);
  });
});
