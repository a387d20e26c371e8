// No input may make cfh deaf to SIGINT/SIGTERM (AH-LIFE-3): when cleanup after a signal
// cannot finish, here because the engine stops answering while the command runs, cfh still
// exits with the signal's status within its 30 s grace, says so, and leaves what is left
// (owner-labelled) to `cfh reap`. The engine is reached through a proxy the test owns, which
// forwards to the real engine until the test tells it to go silent.
import { describe, expect, it } from 'vitest';
import { createConnection, createServer, type Socket } from 'node:net';
import { docker, runIdOf, startCfh, useScratch, waitForEvent } from './helpers.js';

const scratch = useScratch('signal-grace');

const ENGINE_SOCKET = '/var/run/docker.sock';

/** A unix-socket proxy to the engine; `silence()` stops forwarding anything more. */
async function engineProxy(file: string): Promise<{
  silence(): void;
  close(): Promise<void>;
}> {
  let silent = false;
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    sockets.push(client);
    if (silent) return; // accepted, never answered
    const upstream = createConnection(ENGINE_SOCKET);
    sockets.push(upstream);
    client.on('data', (chunk) => {
      if (!silent) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!silent) client.write(chunk);
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(file, resolve));
  return {
    silence: () => {
      silent = true;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('an engine that stops answering while cfh cleans up', () => {
  it('SIGTERM still ends cfh: 143 within the 30 s grace, with a line saying why', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art');
    const proxy = await engineProxy(scratch.path('engine.sock'));
    const child = startCfh(
      ['sandbox', 'run', '--workspace', repo, '--artifact-root', root, '--', 'sleep', '120'],
      { env: { DOCKER_HOST: `unix://${scratch.path('engine.sock')}` } },
    );
    let runId: string | undefined;
    try {
      runId = runIdOf(await waitForEvent(root, 'container_started'));
      proxy.silence();
      const sent = Date.now();
      // Not child.kill(): execa would follow it with SIGKILL after 5 s.
      process.kill(child.pid ?? 0, 'SIGTERM');
      const result = await Promise.race([
        child,
        new Promise<undefined>((resolve) => {
          setTimeout(() => {
            resolve(undefined);
          }, 45_000);
        }),
      ]);
      const waited = Date.now() - sent;
      expect(result, 'cfh was still running 45 s after SIGTERM').toBeDefined();
      expect(result?.exitCode, `${String(result?.signal)} ${result?.stderr ?? ''}`).toBe(143);
      expect(result?.stderr).toMatch(
        /cfh: SIGTERM: cleanup did not finish within 30 s; exiting \(cfh reap removes what is left\)/,
      );
      expect(waited).toBeGreaterThanOrEqual(29_000);
    } finally {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      await proxy.close();
      if (runId !== undefined) {
        for (const c of await docker.listContainers({
          all: true,
          filters: { label: [`cfh.run-id=${runId}`] },
        }))
          await docker.getContainer(c.Id).remove({ force: true });
      }
    }
  }, 90_000);
});
