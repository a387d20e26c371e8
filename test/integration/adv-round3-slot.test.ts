// Adversarial round 3, second pass, class 8 against the session slot (src/serve/session-slot.ts):
// the slot is one process's; a session open and idle in one `cfh serve` process must not be
// continued by a restore in another (session_live_elsewhere), and a session closed and
// restored in the same write as its close must be continued once.
import { describe, expect, it } from 'vitest';
import { useScratch } from './helpers.js';
import { ServeClient } from './serve-support.js';

const scratch = useScratch('adv3-slot');

describe('class 8: a session in two processes', () => {
  it('a restore in a second process while the first holds the session open is refused', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-live');
    const script = await scratch.file('talk.yaml', 'turns:\n  - text: one\n  - text: two\n');
    const args = ['--profile', 'untrusted-repo', '--workspace', repo, '--artifact-root', root];
    const first = new ServeClient([...args, '--script', script]);
    const { sessionId } = await first.call('session/open', {});
    expect(await first.turn(String(sessionId), 'first')).toMatchObject({ status: 'answered' });
    const second = new ServeClient([...args, '--script', script]);
    const r = await second.request('session/restore', { sessionId });
    if (r.error === undefined) await second.call('session/close', { sessionId });
    await second.end();
    await first.call('session/close', { sessionId });
    await first.end();
    expect(r.error?.data?.code, JSON.stringify(r)).toBe('session_live_elsewhere');
  });

  it('session/close and session/restore of it in one write: continued once, after the close', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-same');
    const script = await scratch.file('talk2.yaml', 'turns:\n  - text: one\n  - text: two\n');
    const c = new ServeClient([
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--script',
      script,
    ]);
    const { sessionId } = await c.call('session/open', {});
    expect(await c.turn(String(sessionId), 'first')).toMatchObject({ status: 'answered' });
    const [closed, restored] = c.together([
      ['session/close', { sessionId }],
      ['session/restore', { sessionId }],
    ]);
    const [cl, re] = await Promise.all([closed, restored]);
    if (re?.error === undefined)
      await c.call('session/close', { sessionId }).catch(() => undefined);
    await c.end();
    expect(cl?.error, JSON.stringify(cl)).toBeUndefined();
    // Either refused (the slot still held while the close ran) or a run that began after
    // the closed one ended: never two runs of one session at once.
    if (re?.error === undefined) {
      const result = re?.result as { restoredFrom?: string } | undefined;
      expect(result?.restoredFrom).toBe(sessionId);
    } else expect(re.error.data?.code).toMatch(/session_open|session_live_elsewhere/);
  });
});
