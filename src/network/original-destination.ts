// Where a redirected connection was going. The guard's DNAT hides the original
// destination from the gateway (Node cannot read SO_ORIGINAL_DST), but the guard's
// namespace keeps it in its connection-tracking table. A small reader runs in the guard
// (trusted, root there, never in the workload) and answers lookups by source port.
import { createInterface } from 'node:readline';
import type { StartedGuard } from '../substrate/runtime.js';

export type OriginalDestinationLookup = (
  sourceAddress: string,
  sourcePort: number,
) => Promise<{ address: string; port: number } | undefined>;

/** Python, because the guard image has python3 and no Node. Reads /proc/net/nf_conntrack. */
export const CONNTRACK_READER = `
import sys
def find(src, sport):
    try:
        with open('/proc/net/nf_conntrack') as f:
            for line in f:
                fields = line.split()
                if len(fields) < 4 or fields[2] != 'tcp':
                    continue
                seen = {}
                for item in fields:
                    if '=' in item:
                        k, v = item.split('=', 1)
                        if k in ('src', 'dst', 'sport', 'dport') and k not in seen:
                            seen[k] = v
                if seen.get('src') == src and seen.get('sport') == sport:
                    return seen.get('dst'), seen.get('dport')
    except OSError:
        pass
    return None
for line in sys.stdin:
    parts = line.split()
    if len(parts) != 3:
        continue
    found = find(parts[1], parts[2])
    sys.stdout.write(parts[0] + (' %s %s\\n' % found if found else ' -\\n'))
    sys.stdout.flush()
`;

const LOOKUP_TIMEOUT_MS = 1000;

export async function conntrackLookup(
  guard: StartedGuard,
): Promise<{ lookup: OriginalDestinationLookup; close(): void }> {
  const reader = await guard.attachExec(['python3', '-u', '-c', CONNTRACK_READER]);
  const pending = new Map<number, (r: { address: string; port: number } | undefined) => void>();
  let next = 1;
  const lines = createInterface({ input: reader.stdout });
  lines.on('line', (line) => {
    const [id, address, port] = line.trim().split(' ');
    const resolve = pending.get(Number(id));
    if (resolve === undefined) return;
    pending.delete(Number(id));
    resolve(
      address !== undefined && address !== '-' && port !== undefined
        ? { address, port: Number(port) }
        : undefined,
    );
  });
  const lookup: OriginalDestinationLookup = (sourceAddress, sourcePort) =>
    new Promise((resolve) => {
      const id = next++;
      const timer = setTimeout(() => {
        pending.delete(id);
        resolve(undefined);
      }, LOOKUP_TIMEOUT_MS);
      pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      reader.stdin.write(`${id} ${sourceAddress.replace(/^::ffff:/, '')} ${sourcePort}\n`);
    });
  return {
    lookup,
    close: () => {
      lines.close();
      reader.close();
      for (const resolve of pending.values()) resolve(undefined);
      pending.clear();
    },
  };
}
