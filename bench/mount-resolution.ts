// What resolving a mount source once, by descriptor, costs at planning (AH-CONT-1): the
// mount table of a workspace and three extra mounts, one reached through a system link
// (`/bin -> usr/bin` where it is one: no other link is followed), resolved by
// resolveMounts (open O_PATH, /proc/self/fd, fstat, the walk, the link's trust, statfs)
// against what it replaced (realpath, the same forbidden-tree and socket checks, then stat),
// in the same process, on paths this bench makes. Ratios and microseconds, never asserted.
//   bench/run.sh mount-resolution [rounds]
import { lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ENGINE_SOCKETS,
  FORBIDDEN_HOST_TREES,
  isWithin,
  resolveMounts,
  type MountRequest,
} from '../src/sandbox/mount-policy.js';
import { median } from './stats.js';

const [rounds = 20_000] = process.argv.slice(2).map((a) => Number(a));

function main(): void {
  const scratch = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cfh-bench-resolve-')));
  try {
    const sources = ['ws', 'a/b/c', 'data', 'deep/x/y/z/w'].map((p) => path.join(scratch, p));
    for (const s of sources) mkdirSync(s, { recursive: true });
    const throughLink = lstatSync('/bin').isSymbolicLink() ? '/bin' : (sources[2] ?? '');
    const requests: MountRequest[] = [
      { source: sources[0] ?? '', target: '/workspace', mode: 'rw', origin: '--workspace' },
      { source: sources[1] ?? '', target: '/a', mode: 'ro', origin: '--mount[0]' },
      {
        source: throughLink,
        target: '/data',
        mode: 'ro',
        origin: '--mount[1]',
      },
      { source: sources[3] ?? '', target: '/deep', mode: 'ro', origin: '--mount[2]' },
    ];
    const realOrNot = (p: string): string | undefined => {
      try {
        return realpathSync(p);
      } catch {
        return undefined;
      }
    };
    // The resolution before: realpath, the policy's checks on the result, then stat.
    const baseline = (): void => {
      for (const r of requests) {
        const real = realpathSync(r.source);
        for (const t of FORBIDDEN_HOST_TREES) {
          if ([t, realOrNot(t)].some((x) => x !== undefined && isWithin(real, x)))
            throw new Error(t);
        }
        const sockets = ENGINE_SOCKETS.map((x) => realOrNot(x) ?? x);
        if (sockets.includes(real) || statSync(real).isSocket()) throw new Error(real);
        statSync(real, { bigint: true });
      }
    };
    const measured = (): void => {
      resolveMounts(requests);
    };
    const per = (fn: () => void): number => {
      const samples: number[] = [];
      for (let batch = 0; batch < 20; batch += 1) {
        const start = process.hrtime.bigint();
        for (let i = 0; i < rounds / 20; i += 1) fn();
        samples.push(Number(process.hrtime.bigint() - start) / (rounds / 20) / 1000);
      }
      return median(samples);
    };
    per(baseline); // warm-up
    per(measured);
    const base = per(baseline);
    const now = per(measured);
    console.log(`mount table of 4 sources (one through a link), ${rounds} resolutions each`);
    console.log(`  realpath, checks, stat (before)   ${base.toFixed(1)} us`);
    console.log(
      `  resolveMounts                ${now.toFixed(1)} us   x${(now / base).toFixed(2)}`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

main();
