// Run identifiers: sortable by time, unique by randomness, and safe as a single path
// component, so a run directory is always directly beneath the artifact root (AH-ART-3).
import { randomBytes } from 'node:crypto';

export const RUN_ID_PATTERN = /^\d{8}T\d{6}Z-[0-9a-f]{8}$/;

export function newRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(4).toString('hex')}`;
}

export function isRunId(value: string): boolean {
  return RUN_ID_PATTERN.test(value);
}
