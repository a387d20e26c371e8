// A spec replayed outside a run session (the benches' raw+spec series) mounts the run's
// /etc/hosts, which the run session writes into the run directory; this writes it the same.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LOOPBACK_HOSTS } from '../src/sandbox/derive-spec.js';
import type { ContainerSpec } from '../src/substrate/container-spec.js';

export function writePlanHosts(spec: ContainerSpec): void {
  const hosts = spec.mounts.find((m) => m.target === '/etc/hosts');
  if (hosts === undefined) return;
  mkdirSync(path.dirname(hosts.source), { recursive: true });
  writeFileSync(hosts.source, LOOPBACK_HOSTS);
}
