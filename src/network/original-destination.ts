// Where a redirected connection was going. The guard's DNAT hides the original
// destination from the gateway (Node cannot read SO_ORIGINAL_DST), but the guard's
// namespace keeps it in its connection-tracking table. A small reader runs in the guard
// (trusted, root there, never in the workload; the guard's own process once its rules are
// in) and answers lookups by source port.
import { createInterface } from 'node:readline';
import type { GuardProcess } from '../substrate/runtime.js';

/** By the connection as the gateway sees it: the peer's address and port, and its own port. */
export type OriginalDestinationLookup = (
  peerAddress: string,
  peerPort: number,
  localPort: number,
) => Promise<{ address: string; port: number } | undefined>;

/**
 * Python, because the guard image has python3 and no Node. Reads /proc/net/nf_conntrack and
 * matches the connection's reply direction (gateway → peer), which is unique and is what
 * the gateway sees: the original direction's source may have been rewritten (a loopback
 * source masqueraded on its way out, see guard-rules.ts).
 */
export const CONNTRACK_READER = `
import sys
def tuples(fields):
    out, i = [{}, {}], 0
    for item in fields:
        if '=' not in item:
            continue
        k, v = item.split('=', 1)
        if k not in ('src', 'dst', 'sport', 'dport'):
            continue
        if k in out[i]:
            if i == 1:
                break
            i = 1
        out[i][k] = v
    return out
def find(peer, peer_port, local_port):
    try:
        with open('/proc/net/nf_conntrack') as f:
            for line in f:
                fields = line.split()
                if len(fields) < 4 or fields[2] != 'tcp':
                    continue
                orig, reply = tuples(fields)
                if (reply.get('dst') == peer and reply.get('dport') == peer_port
                        and reply.get('sport') == local_port):
                    return orig.get('dst'), orig.get('dport')
    except OSError:
        pass
    return None
for line in sys.stdin:
    parts = line.split()
    if len(parts) != 4:
        continue
    found = find(parts[1], parts[2], parts[3])
    sys.stdout.write(parts[0] + (' %s %s\\n' % found if found else ' -\\n'))
    sys.stdout.flush()
`;

const LOOKUP_TIMEOUT_MS = 1000;

/** Lookups through the reader running as the guard's process (guard-rules.ts, guardCommand). */
export function conntrackLookup(reader: GuardProcess): {
  lookup: OriginalDestinationLookup;
  close(): void;
} {
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
  const lookup: OriginalDestinationLookup = (peerAddress, peerPort, localPort) =>
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
      reader.stdin.write(`${id} ${peerAddress.replace(/^::ffff:/, '')} ${peerPort} ${localPort}\n`);
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
