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

export function parseSize(field: string, value: string | number): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value > 0) return value;
    throw new ConfigError('invalid_size', `${field}: ${String(value)} is not a positive size`, {
      field,
      value,
    });
  }
  const match = SIZE.exec(value.trim());
  const unit = match?.[2]?.toLowerCase() ?? '';
  const multiplier = UNITS[unit];
  if (!match?.[1] || multiplier === undefined) {
    throw new ConfigError(
      'invalid_size',
      `${field}: '${value}' is not a size (write e.g. 512m or 2g)`,
      {
        field,
        value,
      },
    );
  }
  const bytes = Math.floor(Number(match[1]) * multiplier);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ConfigError('invalid_size', `${field}: '${value}' is not a positive size`, {
      field,
      value,
    });
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
