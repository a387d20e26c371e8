// Human sizes as written in profiles and flags: `512m`, `2g`, `64k`, `100b`. Binary
// multiples, as Docker reads them. A bare number is bytes only where the field's name says
// so (`limits.outputBytes`, `CFH_DRAFT_MAX_BYTES`): elsewhere (`--memory 512`) it is refused
// with the unit to write, since Docker would read 512 bytes where MiB were meant.
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

/** Whether a bare number is bytes for this field: its name says it counts bytes. */
function bareIsBytes(field: string): boolean {
  return /bytes$/i.test(field);
}

function noUnit(field: string, value: string | number): ConfigError {
  const n = String(value).trim();
  return typed(field)
    ? new ConfigError(
        'invalid_size',
        `${field}: '${n}' has no unit`,
        details(field, value),
        `write '${n}m' (MiB) or '${n}g' (GiB), '${n}b' for bytes`,
      )
    : new ConfigError(
        'invalid_size',
        `${field}: a size needs a unit`,
        details(field, value),
        'write it with a unit: m (MiB), g (GiB), or b for bytes',
      );
}

export function parseSize(field: string, value: string | number): number {
  if (!bareIsBytes(field) && /^\d+(\.\d+)?$/.test(String(value).trim())) throw noUnit(field, value);
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
