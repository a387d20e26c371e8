// The resource limits the engine and kernel will actually accept and enforce, checked when
// the run is planned (AH-INV-4), so a limit they would refuse fails with 125 before any run
// directory or engine object exists, rather than at container create or start.
import os from 'node:os';
import { ConfigError } from '../errors.js';
import type { Profile } from './profile-schema.js';
import { parseSize } from './size.js';

/** Docker 20.10 refuses a smaller memory limit ("Minimum memory limit allowed is 6MB"). */
export const MIN_MEMORY_BYTES = 6 * 1024 * 1024;
/** 0.01 CPU is a 1 ms CFS quota per 100 ms period, the kernel's smallest quota. */
export const MIN_CPUS = 0.01;
/**
 * The kernel rounds a tmpfs size up to whole pages; a smaller limit would be recorded in the
 * snapshot as one thing and enforced as another.
 */
export const MIN_TMPFS_BYTES = 4096;

export interface LimitOrigins {
  /** The flag that set each limit, when a flag did (`--memory`); else the profile field. */
  readonly memory?: string | undefined;
  readonly cpus?: string | undefined;
  readonly tmpfs?: string | undefined;
}

function refuse(field: string, value: unknown, why: string): ConfigError {
  return new ConfigError('limit_out_of_range', `${field}: '${String(value)}' ${why}`, {
    field,
    value,
  });
}

/**
 * `hostCpus`: the engine refuses a CPU limit above the CPUs it has ("Range of CPUs is from
 * 0.01 to N"); cfh asks this host, where the engine runs unless DOCKER_HOST points elsewhere.
 */
export function checkEngineLimits(
  limits: Profile['limits'],
  origins: LimitOrigins,
  hostCpus: number = os.cpus().length,
): void {
  const memoryField = origins.memory ?? 'limits.memory';
  if (parseSize(memoryField, limits.memory) < MIN_MEMORY_BYTES) {
    throw refuse(
      memoryField,
      limits.memory,
      'is below the engine\'s minimum memory limit of 6 MiB (write e.g. "64m")',
    );
  }
  const cpusField = origins.cpus ?? 'limits.cpus';
  if (limits.cpus < MIN_CPUS) {
    throw refuse(
      cpusField,
      limits.cpus,
      `is below ${MIN_CPUS} CPU, the smallest quota the kernel enforces`,
    );
  }
  if (hostCpus > 0 && limits.cpus > hostCpus) {
    throw refuse(
      cpusField,
      limits.cpus,
      `is more than the ${hostCpus} CPU(s) this host has; the engine refuses it`,
    );
  }
  const tmpfsField = origins.tmpfs ?? 'limits.tmpfs';
  if (parseSize(tmpfsField, limits.tmpfs) < MIN_TMPFS_BYTES) {
    throw refuse(
      tmpfsField,
      limits.tmpfs,
      'is below one 4 KiB page, which the kernel would round it up to',
    );
  }
}
