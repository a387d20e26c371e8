// Human sizes as written in profiles and flags: `512m`, `2g`, `64k`, or plain bytes.
// Binary multiples, as Docker reads them.
import { ConfigError } from '../errors.js';

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};

const SIZE = /^(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?$/i;

/**
 * How a refusal shows the value: as typed for a flag or an environment variable (the
 * operator's own text), never for a field of a profile, which may be any file (AH-INV-4).
 */
function typed(field: string): boolean {
  return /^(--|[A-Z])/.test(field);
}

function shown(field: string, value: string | number): string {
  return typed(field) ? ` '${String(value)}'` : '';
}

function details(field: string, value: string | number): Record<string, unknown> {
  return typed(field) ? { field, value } : { field };
}

export function parseSize(field: string, value: string | number): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value > 0) return value;
    throw new ConfigError(
      'invalid_size',
      `${field}:${shown(field, value)} is not a positive size`,
      details(field, value),
    );
  }
  const match = SIZE.exec(value.trim());
  const unit = match?.[2]?.toLowerCase() ?? '';
  const multiplier = UNITS[unit];
  if (!match?.[1] || multiplier === undefined) {
    throw new ConfigError(
      'invalid_size',
      `${field}:${shown(field, value)} is not a size (write e.g. 512m or 2g)`,
      details(field, value),
    );
  }
  const bytes = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ConfigError(
      'invalid_size',
      `${field}:${shown(field, value)} is not a positive size`,
      details(field, value),
    );
  }
  return bytes;
}

export function parsePositiveNumber(field: string, value: string, integer: boolean): number {
  const n = Number(value);
  const ok =
    /^\d+(\.\d+)?$/.test(value.trim()) &&
    Number.isFinite(n) &&
    n > 0 &&
    (!integer || Number.isInteger(n));
  if (!ok) {
    throw new ConfigError(
      'invalid_number',
      `${field}: '${value}' is not a positive ${integer ? 'integer' : 'number'}`,
      { field, value },
    );
  }
  return n;
}
