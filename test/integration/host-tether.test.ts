// The host tether (substrate/docker/host-tether.ts) for every kind of run: a process holding
// containers through it is SIGKILLed, and what it held stops; what it released runs on; a
// tether child killed while its process lives is replaced and told the whole set. The
// holding process is a small Node program on the built dist/, so the test names its own
// containers and reads nothing else of the engine.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRecipe } from '../../src/image/recipe.js';
import { REPO_ROOT, docker } from './helpers.js';

const made: string[] = [];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

afterAll(async () => {
  for (const id of made)
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch(() => {});
});

async function idleContainer(): Promise<string> {
  const c = await docker.createContainer({
    Image: loadRecipe().ref,
    Cmd: ['sleep', '600'],
    Labels: { 'cfh.test': 'host-tether' },
    HostConfig: { NetworkMode: 'none', AutoRemove: false },
  });
  made.push(c.id);
  await c.start();
  return c.id;
}

async function running(id: string): Promise<boolean> {
  return (await docker.getContainer(id).inspect()).State.Running;
}

async function waitStopped(id: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!(await running(id))) return true;
    await sleep(100);
  }
  return false;
}

/**
 * A process that holds `hold`, releases `release`, optionally kills its own tether child
 * first (and then holds `afterReplace`), says `ready`, and waits to be killed.
 */
function holder(o: { hold: string[]; release?: string[]; replace?: string[] }): ChildProcess {
  const program = `
    const { hostTether } = await import(${JSON.stringify(`${REPO_ROOT}dist/substrate/docker/host-tether.js`)});
    const { execFileSync } = await import('node:child_process');
    const t = hostTether({ socketPath: '/var/run/docker.sock' });
    for (const id of ${JSON.stringify(o.hold)}) t.hold(id);
    for (const id of ${JSON.stringify(o.release ?? [])}) t.release(id);
    const replace = ${JSON.stringify(o.replace ?? [])};
    if (replace.length > 0) {
      await new Promise((r) => setTimeout(r, 500));
      // The tether child is this process's only child: kill it as an operator could.
      execFileSync('pkill', ['-KILL', '-P', String(process.pid), '-f', 'docker/host-tether-main']);
      await new Promise((r) => setTimeout(r, 300));
      for (const id of replace) t.hold(id);
    }
    await new Promise((r) => setTimeout(r, 500));
    process.stdout.write('ready\\n');
    setInterval(() => {}, 1000);
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', program], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

async function ready(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
    child.once('exit', () => {
      reject(new Error('the holding process ended early'));
    });
  });
}

describe('the host tether', () => {
  it('a SIGKILLed process takes the containers it held with it, not the ones it released', async () => {
    const held = await idleContainer();
    const released = await idleContainer();
    const child = holder({ hold: [held, released], release: [released] });
    await ready(child);
    expect(await running(held)).toBe(true);
    const ended = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await ended;
    expect(await waitStopped(held, 5_000)).toBe(true);
    await sleep(2_000); // past the tether's second pass
    expect(await running(released)).toBe(true);
  });

  it('a tether child killed while its process lives is replaced, and the replacement holds the whole set', async () => {
    const first = await idleContainer();
    const second = await idleContainer();
    const child = holder({ hold: [first], replace: [second] });
    await ready(child);
    const ended = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await ended;
    expect(await waitStopped(first, 5_000)).toBe(true);
    expect(await waitStopped(second, 5_000)).toBe(true);
  });
});
