// The host tether's child (substrate/docker/host-tether.ts): started by cfh in a session of its own,
// with the engine's address as its one argument. It reads `+ID` (hold) and `-ID` (release)
// lines from cfh's pipe; when the pipe ends, cfh has ended, however it ended, and every
// container still held is SIGKILLed through the engine's API, then once more a moment later
// (a start cfh asked for as it died may land after the first kill), and the child exits.
// Node's built-ins only: it starts in a few tens of milliseconds and loads nothing of cfh.
import { request } from 'node:http';

type Address = { socketPath: string } | { host: string; port: number };

/** A container id as the engine gives it (hex); any other line is ignored. */
const ID = /^[0-9a-f]{12,64}$/;
/** The second pass: a start in flight when cfh died has landed by then. */
const SECOND_PASS_MS = 1_500;
/** An engine that does not answer a kill in this long is not waited for. */
const KILL_TIMEOUT_MS = 10_000;

function parseAddress(text: string | undefined): Address {
  const value: unknown = JSON.parse(text ?? '');
  if (typeof value === 'object' && value !== null) {
    if ('socketPath' in value && typeof value.socketPath === 'string')
      return { socketPath: value.socketPath };
    if (
      'host' in value &&
      typeof value.host === 'string' &&
      'port' in value &&
      typeof value.port === 'number'
    )
      return { host: value.host, port: value.port };
  }
  throw new Error('the host tether needs the engine address as its argument');
}

function kill(address: Address, id: string): Promise<void> {
  return new Promise((resolve) => {
    const req = request(
      {
        ...address,
        method: 'POST',
        path: `/containers/${id}/kill?signal=SIGKILL`,
        timeout: KILL_TIMEOUT_MS,
      },
      (res) => {
        res.resume();
        res.on('end', resolve);
        res.on('error', () => {
          resolve();
        });
      },
    );
    // Gone already, or never started (409): nothing to stop.
    req.on('error', () => {
      resolve();
    });
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

function main(): void {
  const address = parseAddress(process.argv[2]);
  const held = new Set<string>();
  let pending = '';
  let ended = false;
  const finish = async (): Promise<void> => {
    if (ended) return;
    ended = true;
    const ids = [...held];
    if (ids.length > 0) {
      await Promise.all(ids.map((id) => kill(address, id)));
      await new Promise((r) => setTimeout(r, SECOND_PASS_MS));
      await Promise.all(ids.map((id) => kill(address, id)));
    }
    process.exit(0);
  };
  // Not the terminal's: it has none (a session of its own), but a stray signal must not
  // end it before cfh does.
  for (const name of ['SIGHUP', 'SIGINT', 'SIGPIPE'] as const) process.on(name, () => undefined);
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    pending += chunk;
    let end = pending.indexOf('\n');
    while (end >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      const id = line.slice(1);
      if (ID.test(id)) {
        if (line.startsWith('+')) held.add(id);
        else if (line.startsWith('-')) held.delete(id);
      }
      end = pending.indexOf('\n');
    }
  });
  for (const event of ['end', 'close', 'error'] as const)
    process.stdin.on(event, () => {
      void finish();
    });
}

main();
