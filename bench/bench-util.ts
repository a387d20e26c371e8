// Helpers the benches share: settings from the environment, the engine client, tables.
import Docker from 'dockerode';
import type { CfhEnvironment } from '../src/config/env.js';

export function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`${name}: '${raw}' is not an integer >= ${min}`);
  }
  return n;
}

/** The same engine endpoint DockerRuntime talks to. */
export function dockerClient(env: CfhEnvironment): Docker {
  const host = env.dockerHost;
  if (host === undefined) return new Docker({ socketPath: '/var/run/docker.sock' });
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return new Docker({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375) });
}

export function bareName(names: readonly string[]): string[] {
  return names.map((n) => n.replace(/^\//, ''));
}

/** Prints a table: first column left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}
