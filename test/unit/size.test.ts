import { describe, expect, it } from 'vitest';
import { parsePositiveNumber, parseSize } from '../../src/config/size.js';
import { expectConfigError } from './helpers.js';

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe('parseSize', () => {
  it.each<[string, number]>([
    ['512m', 512 * MiB],
    ['2g', 2 * GiB],
    ['64k', 64 * KiB],
    ['64K', 64 * KiB],
    ['1t', 1024 ** 4],
    ['100b', 100],
    ['512mb', 512 * MiB],
    ['512MiB', 512 * MiB],
    ['1.5g', 1.5 * GiB],
    ['  2g  ', 2 * GiB],
  ])('reads %j as %d bytes (binary multiples)', (input, bytes) => {
    expect(parseSize('limits.memory', input)).toBe(bytes);
  });

  it('reads a bare number as bytes only where the field names bytes', () => {
    expect(parseSize('limits.outputBytes', 1)).toBe(1);
    expect(parseSize('limits.outputBytes', '4096')).toBe(4096);
    expect(parseSize('CFH_DRAFT_MAX_BYTES', '100')).toBe(100);
  });

  // The class: a size without a unit where MiB were likely meant (`--memory 512` is 512
  // bytes to Docker). Refused, with the unit to write, as typed or as a profile's number.
  it.each<[string, string | number]>([
    ['--memory', '512'],
    ['--memory', '104857600'],
    ['--memory', ' 2.5 '],
    ['limits.memory', 512],
    ['limits.memory', '536870912'],
    ['limits.tmpfs', 4096],
  ])('refuses %s %j: a size needs a unit', (field, value) => {
    const error = expectConfigError(() => parseSize(field, value), 'invalid_size', field);
    if (field.startsWith('--')) {
      const n = String(value).trim();
      expect(error.message).toBe(`${field}: '${n}' has no unit`);
      expect(error.hint).toContain(`'${n}m'`);
    } else {
      // A profile may be any file: its value is never shown.
      expect(error.message).toBe(`${field}: a size needs a unit`);
      expect(`${error.message} ${String(error.hint)}`).not.toContain(String(value));
    }
  });

  it.each(['12x', '-1', '', '0', 'g', 'm512', '1.2.3', '2gg', '0.5', 'lots', '   '])(
    'refuses the string %j with invalid_size naming the field',
    (input) => {
      const error = expectConfigError(
        () => parseSize('limits.memory', input),
        'invalid_size',
        'limits.memory:',
      );
      expect(error.message.startsWith('limits.memory:')).toBe(true);
      // A profile field's value may be any file's text (AH-INV-4): not quoted, not kept.
      expect(error.details).toEqual({ field: 'limits.memory' });
      expect(error.message).not.toContain(`'${input}'`);
    },
  );

  it('quotes the bad value in the message', () => {
    expectConfigError(() => parseSize('--memory', '12x'), 'invalid_size', "'12x'", '--memory');
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])(
    'refuses the number %d with invalid_size naming the field',
    (input) => {
      expectConfigError(
        () => parseSize('limits.outputBytes', input),
        'invalid_size',
        'limits.outputBytes',
      );
    },
  );
});

describe('parsePositiveNumber', () => {
  it('parses positive decimals when integers are not required', () => {
    expect(parsePositiveNumber('--cpus', '0.5', false)).toBe(0.5);
    expect(parsePositiveNumber('--cpus', '2', false)).toBe(2);
    expect(parsePositiveNumber('--timeout', '1.25', false)).toBe(1.25);
  });

  it('parses positive integers when integers are required', () => {
    expect(parsePositiveNumber('--pids', '64', true)).toBe(64);
  });

  it('refuses a fraction where an integer is required, saying so', () => {
    const error = expectConfigError(
      () => parsePositiveNumber('--pids', '1.5', true),
      'invalid_number',
      '--pids',
      "'1.5'",
      'positive integer',
    );
    expect(error.details).toMatchObject({ field: '--pids', value: '1.5' });
  });

  it.each(['0', '-2', '', '   ', 'abc', 'NaN', 'Infinity', '-0'])(
    'refuses %j with invalid_number naming the field',
    (input) => {
      const error = expectConfigError(
        () => parsePositiveNumber('--timeout', input, false),
        'invalid_number',
        '--timeout',
        'positive number',
      );
      expect(error.message).not.toContain('integer');
    },
  );
});
