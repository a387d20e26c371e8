// Numbers of the evidence in the units people read: 1 GiB, 0.5 CPU, 30 s, 256 pids. Used
// by the HTML report and `runs show`; the JSON keeps the exact integers.

const BINARY = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** `1073741824` → `1 GiB`, `3355443` → `3.2 MiB`, `512` → `512 B`. */
export function humanBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return String(bytes);
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BINARY.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${trim(value, unit === 0 ? 0 : 1)} ${BINARY[unit] ?? 'B'}`;
}

/** `1e9` nano-CPUs → `1 CPU`; `5e8` → `0.5 CPU`; `2e9` → `2 CPUs`. */
export function humanNanoCpus(nanoCpus: number): string {
  const cpus = nanoCpus / 1e9;
  return `${trim(cpus, 2)} ${cpus > 1 ? 'CPUs' : 'CPU'}`;
}

/** `30000` → `30 s`; `1500` → `1.5 s`; `250` → `250 ms`; `0.4` → `0.4 ms`; `150000` → `2.5 min`. */
export function humanMs(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return String(ms);
  if (ms < 1) return `${trim(ms, 2)} ms`;
  if (ms < 1000) return `${trim(ms, 0)} ms`;
  if (ms < 120_000) return `${trim(ms / 1000, ms < 10_000 ? 2 : 1)} s`;
  if (ms < 7_200_000) return `${trim(ms / 60_000, 1)} min`;
  return `${trim(ms / 3_600_000, 1)} h`;
}

/** `n` things: `1 pid`, `256 pids`. */
export function humanCount(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

function trim(value: number, decimals: number): string {
  return String(Number(value.toFixed(decimals)));
}

/** One line for a run's (or container's) cgroup counters; absent counters are left out. */
export function humanResources(c: {
  memoryPeakBytes?: number | undefined;
  cpuTotalMs?: number | undefined;
  cpuUserMs?: number | undefined;
  cpuSystemMs?: number | undefined;
  pidsPeak?: number | undefined;
}): string {
  const parts: string[] = [];
  if (c.memoryPeakBytes !== undefined) parts.push(`memory peak ${humanBytes(c.memoryPeakBytes)}`);
  if (c.cpuTotalMs !== undefined) {
    const split =
      c.cpuUserMs !== undefined && c.cpuSystemMs !== undefined
        ? ` (user ${humanMs(c.cpuUserMs)}, system ${humanMs(c.cpuSystemMs)})`
        : '';
    parts.push(`CPU ${humanMs(c.cpuTotalMs)}${split}`);
  }
  if (c.pidsPeak !== undefined) parts.push(`pids peak ${c.pidsPeak}`);
  return parts.length === 0 ? 'no counters' : parts.join(', ');
}
