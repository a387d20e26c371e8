// The credential scrubber's own cost (part of make bench-host-tools; alone: bench/run.sh
// scrub): Scrubber.bytes, .text and .value over inputs of two sizes (64 KiB, 1 MiB), in CPU
// ns per byte, and the large size's over the small's (linearity: 1.0 when the cost grows as
// the text does). Inputs: prose (no credential: the common case), a tool's JSON answer with
// base64 wrapped by escaped line breaks (credentials inside), UTF-16LE text, random bytes,
// texts made to be slow (half-credentials among escapes and separators, a run of quotes, a
// run of backslashes, the credential's pieces repeated), pieces (a third) of a 4 KiB
// credential among prose, and JSON values (no match; a credential in every string).
// CPU time, not wall time: BENCH_SCRUB_ROUNDS (default 5) samples of at least 20 ms of CPU
// each after one warm-up, the median kept. A kind the scrubber throws on is reported as its
// error.
import { randomBytes } from 'node:crypto';
import { Scrubber } from '../src/tools/host/scrub.js';
import { median } from './stats.js';

const CREDENTIAL = 'tok_Q7v/+z9Kp2mW!x3Lr';
const LONG_CREDENTIAL = randomBytes(3072).toString('base64');
const SMALL = 64 * 1024;
const LARGE = 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_SCRUB_ROUNDS ?? 5);

const PROSE =
  'The build finished in 41 s; 3 warnings (see log line 1204).\n  Next: run the tests, then "deploy" to staging.\n';

function repeatTo(unit: string, size: number): string {
  return unit.repeat(Math.ceil(size / unit.length)).slice(0, size);
}

function wrappedJson(size: number): string {
  const blob = Buffer.concat([randomBytes(3000), Buffer.from(CREDENTIAL), randomBytes(3000)]);
  const b64 = (blob.toString('base64').match(/.{1,60}/g) ?? []).join('\\n');
  return repeatTo(`{"content":"${b64}","encoding":"base64"}\n`, size);
}

const half = CREDENTIAL.slice(0, CREDENTIAL.length / 2);

/** Inputs as bytes, by kind; `long`: scrubbed with the 4 KiB credential. */
const KINDS: Record<string, { make: (n: number) => Buffer; long?: true }> = {
  prose: { make: (n) => Buffer.from(repeatTo(PROSE, n)) },
  'wrapped-json': { make: (n) => Buffer.from(wrappedJson(n)) },
  utf16: { make: (n) => Buffer.from(repeatTo(`token=${CREDENTIAL}\n${PROSE}`, n / 2), 'utf16le') },
  binary: { make: (n) => randomBytes(n) },
  adversarial: {
    make: (n) =>
      Buffer.from(repeatTo(`${half}\\\\\\\\u00%4"," \\n  ${half.toUpperCase()}=\n&#x7`, n)),
  },
  quotes: { make: (n) => Buffer.from('"'.repeat(n)) },
  backslashes: { make: (n) => Buffer.from(`${'\\'.repeat(n / 2 - 1)}"${'\\'.repeat(n / 2)}`) },
  'repeated pieces': { make: (n) => Buffer.from(repeatTo(CREDENTIAL.slice(0, 11), n)) },
  'long credential, thirds of it': {
    make: (n) => Buffer.from(repeatTo(`${PROSE}${LONG_CREDENTIAL.slice(0, 1365)}\n`, n)),
    long: true,
  },
};

function valueOf(size: number, match: boolean): unknown {
  const text = match ? `item ${CREDENTIAL} end` : PROSE;
  const item = { id: 1234567, name: 'x', text, tags: ['a', 'b'], n: 3.25 };
  const count = Math.ceil(size / JSON.stringify(item).length);
  return { items: Array.from({ length: count }, (_, i) => ({ ...item, id: i })) };
}

/** CPU time (this process's, µs) since `from`: what contention for the cores does not add. */
function cpuSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return d.user + d.system;
}

/**
 * CPU ns per byte of `fn` over `bytes`: the median of ROUNDS samples, each as many calls
 * as take 20 ms of CPU. Wall time on a shared machine measured its load, not the scrubber.
 */
function nsPerByte(fn: () => unknown, bytes: number): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    const from = process.cpuUsage();
    let calls = 0;
    do {
      fn();
      calls += 1;
    } while (cpuSince(from) < 20_000);
    samples.push((cpuSince(from) * 1e3) / (calls * bytes));
  }
  return median(samples);
}

export type ScrubFigures = Record<
  string,
  { small: number; large: number; linearity: number } | { error: string }
>;

/** ns per byte at SMALL and LARGE, and LARGE's over SMALL's (1.0: linear). */
export function scrubBench(): ScrubFigures {
  const out: ScrubFigures = {};
  const record = (kind: string, run: (size: number) => [() => unknown, number]): void => {
    try {
      const [small, large] = [SMALL, LARGE].map((size) => nsPerByte(...run(size)));
      out[kind] = {
        small: Number(small?.toFixed(1)),
        large: Number(large?.toFixed(1)),
        linearity: Number(((large ?? 0) / (small ?? 1)).toFixed(2)),
      };
    } catch (error) {
      out[kind] = { error: String(error).slice(0, 120) };
    }
  };
  const short = new Scrubber([{ name: 'API_TOKEN', value: CREDENTIAL }]);
  let long: Scrubber | undefined;
  for (const [kind, { make, long: isLong }] of Object.entries(KINDS)) {
    const s = (): Scrubber =>
      isLong === true ? (long ??= new Scrubber([{ name: 'KEY', value: LONG_CREDENTIAL }])) : short;
    record(`bytes ${kind}`, (size) => {
      const input = make(size);
      return [() => s().bytes(input), input.length];
    });
    record(`text ${kind}`, (size) => {
      const input = make(size).toString('utf8');
      return [() => s().text(input), Buffer.byteLength(input)];
    });
  }
  for (const match of [false, true])
    record(match ? 'value, a credential in every string' : 'value', (size) => {
      const input = valueOf(size, match);
      return [() => short.value(input), JSON.stringify(input).length];
    });
  return out;
}

if (process.argv[1]?.endsWith('scrub.js') === true) {
  process.stdout.write(`${JSON.stringify(scrubBench(), null, 2)}\n`);
}
