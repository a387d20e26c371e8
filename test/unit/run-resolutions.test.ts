// The run's record of resolutions and its budget of new names: what a name entry
// may connect to, and how many distinct names a `*.domain` entry may send upstream.
import { describe, expect, it } from 'vitest';
import { RunResolutions } from '../../src/network/run-resolutions.js';

describe('RunResolutions', () => {
  it('remembers which addresses were resolved for which name, whatever their spelling', () => {
    const r = new RunResolutions();
    r.record('Good.Test.', ['192.0.2.1', '2001:DB8:0:0:0:0:0:1']);
    expect(r.resolvedFor('good.test', '192.0.2.1')).toBe(true);
    expect(r.resolvedFor('good.test', '::ffff:192.0.2.1')).toBe(true);
    expect(r.resolvedFor('good.test', '2001:db8::1')).toBe(true);
    expect(r.resolvedFor('good.test', '192.0.2.2')).toBe(false);
    expect(r.resolvedFor('other.test', '192.0.2.1')).toBe(false);
    r.record('good.test', ['192.0.2.2']);
    expect(r.resolvedFor('good.test', '192.0.2.1')).toBe(true);
    expect(r.resolvedFor('good.test', '192.0.2.2')).toBe(true);
  });

  it('admits a burst of new names, then one per interval; a name seen before is free', () => {
    let now = 0;
    const r = new RunResolutions({ burst: 3, refillMs: 1000, now: () => now });
    expect(['a', 'b', 'c', 'd'].map((n) => r.admit(`${n}.svc.test`))).toEqual([
      true,
      true,
      true,
      false,
    ]);
    expect(r.admit('A.svc.test.')).toBe(true);
    now = 999;
    expect(r.admit('e.svc.test')).toBe(false);
    now = 1000;
    expect(r.admit('e.svc.test')).toBe(true);
    expect(r.admit('f.svc.test')).toBe(false);
    now = 100_000;
    expect(['g', 'h', 'i', 'j'].map((n) => r.admit(`${n}.svc.test`))).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});
