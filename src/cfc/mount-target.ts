// How a container path is compared as a mount target: normalised, no trailing slash, so
// `/data/` and `/data` name one mount (cfc/label-map.ts, cfc/inherited-labels.ts).
import path from 'node:path/posix';

export function targetOf(p: string): string {
  const n = path.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}
