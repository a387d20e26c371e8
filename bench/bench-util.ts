// Helpers the benches share: settings from the environment, the engine client, tables,
// the final check that a bench left no container behind.
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import type { CfhEnvironment } from '../src/config/env.js';
import { LABEL_RUN_ID } from '../src/sandbox/owner.js';

/** Label put on every container a bench creates itself (value: the process's tag). */
export const BENCH_LABEL = 'cfh.bench';

export function intFromEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    throw new Error(`${name}: '${raw}' is not an integer >= ${min}`);
  }
  return n;
}

/** The same engine endpoint DockerRuntime talks to. */
export function dockerClient(env: CfhEnvironment): Docker {
  const host = env.dockerHost;
  if (host === undefined) return new Docker({ socketPath: '/var/run/docker.sock' });
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return new Docker({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375) });
}

export function bareName(names: readonly string[]): string[] {
  return names.map((n) => n.replace(/^\//, ''));
}

/** Prints a table: first column left-aligned, the rest right-aligned. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** What a bench created: the containers the leftover check looks for. */
export interface BenchContainers {
  /** The value of BENCH_LABEL on the containers the bench created itself. */
  readonly tag: string;
  /** Every container name the bench asked for. */
  readonly names: ReadonlySet<string>;
  /**
   * The cfh runs the bench planned: containers labelled cfh.run-id with one of these (a
   * run's sandbox or tool containers, whatever their names). Only these: cfh containers of
   * other processes (tests running beside the bench) are neither counted nor touched.
   */
  readonly runIds?: ReadonlySet<string>;
}

/**
 * Lists what a bench left behind: containers labelled BENCH_LABEL=<tag>, labelled
 * cfh.run-id=<one of its runs>, or carrying a name it created. Prints the verdict, removes
 * any straggler so the engine is left clean, and returns how many there were.
 */
export async function checkLeftovers(docker: Docker, created: BenchContainers): Promise<number> {
  const runIds = created.runIds ?? new Set<string>();
  const all = await docker.listContainers({ all: true });
  const ofRuns = all.filter((c) => {
    const id = c.Labels[LABEL_RUN_ID];
    return id !== undefined && runIds.has(id);
  });
  const benchLabelled = all.filter((c) => c.Labels[BENCH_LABEL] === created.tag);
  const byName = all.filter((c) => bareName(c.Names).some((n) => created.names.has(n)));

  const left = new Map<string, string>();
  for (const c of [...ofRuns, ...benchLabelled, ...byName]) {
    left.set(c.Id, `${bareName(c.Names).join(',')} (${c.State})`);
  }
  console.log('');
  console.log(
    'leftover check: ' +
      (created.runIds === undefined
        ? ''
        : `${ofRuns.length} labelled ${LABEL_RUN_ID}=<one of the ${runIds.size} runs planned>, `) +
      `${benchLabelled.length} labelled ${BENCH_LABEL}=${created.tag}, ${byName.length} of the` +
      ` ${created.names.size} names created` +
      ` -> ${left.size === 0 ? 'none left, engine clean' : `${left.size} LEFT BEHIND`}`,
  );
  for (const [id, what] of left) {
    console.log(`  left behind: ${id.slice(0, 12)} ${what}; removing`);
    await docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch((e: unknown) => {
        console.log(`  could not remove ${id.slice(0, 12)}: ${String(e)}`);
      });
  }
  return left.size;
}

/** Runs a bench's main: its exit status is main's, or 1 with the stack when it throws. */
export function runBench(main: () => Promise<number>): void {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(
        `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      process.exitCode = 1;
    },
  );
}

/**
 * One figure of `make bench-all` (bench/bench-all.ts): a ratio against a baseline measured
 * side by side in the same bench run, the baseline named, the goal it is held to.
 */
export interface BenchRow {
  /** What is measured: `cfh sandbox run -- true, wall p50`. */
  readonly figure: string;
  /** The measured value against the baseline (×), or an absolute figure where the goal is one. */
  readonly value: number;
  /** `x` (ratio), `ms`, `MiB`, `s` or `count`. */
  readonly unit: 'x' | 'ms' | 'MiB' | 's' | 'count';
  /** The baseline, named: `docker run --rm --network none IMAGE true (CLI), p50 0.31 s`. */
  readonly baseline: string;
  /** The goal, as issue 21 states it: `<= 1.0`. */
  readonly goal: string;
  /** Whether the goal is met by this run's figure. */
  readonly met: boolean;
}

/** What a bench module exports for bench-all: its rows, measured when called. */
export type RowSource = () => Promise<readonly BenchRow[]>;

/**
 * The decimals a row's value is shown with: two for a ratio or seconds, none for a count,
 * and for ms or MiB as many as a small figure needs to be read (0.45 ms, 7.4 ms, 690 ms).
 */
export function valueDigits(r: BenchRow): number {
  if (r.unit === 'x' || r.unit === 's') return 2;
  if (r.unit === 'count') return 0;
  const v = Math.abs(r.value);
  return v < 1 ? 2 : v < 10 ? 1 : 0;
}

/** Prints rows as bench-all does: for a bench that is also run alone. */
export function printRows(title: string, list: readonly BenchRow[]): void {
  console.log(title);
  table(
    ['figure', 'value', 'goal', 'met', 'baseline'],
    list.map((r) => [
      r.figure,
      `${r.unit === 'x' ? 'x' : ''}${r.value.toFixed(valueDigits(r))}${r.unit === 'x' ? '' : ` ${r.unit}`}`,
      r.goal,
      r.met ? 'yes' : 'NO',
      r.baseline,
    ]),
  );
}

/** dockerode's modem, as far as a raw exec uses it (its types leave demuxStream out). */
export interface DemuxModem {
  demuxStream(
    raw: NodeJS.ReadableStream,
    stdout: NodeJS.WritableStream,
    stderr: NodeJS.WritableStream,
  ): void;
}

/** The minimum dockerode sequence for an exec whose exit code and output a caller needs. */
export async function rawExec(
  container: Docker.Container,
  argv: readonly string[],
  stdin: Buffer | undefined,
  workingDir: string,
): Promise<{ exitCode: number; stdout: Buffer }> {
  const exec = await container.exec({
    Cmd: [...argv],
    WorkingDir: workingDir,
    AttachStdin: stdin !== undefined,
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: stdin !== undefined });
  const chunks: Buffer[] = [];
  const out = new PassThrough();
  const err = new PassThrough();
  out.on('data', (c: Buffer) => chunks.push(c));
  err.resume();
  (container.modem as DemuxModem).demuxStream(stream, out, err);
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  if (stdin !== undefined) {
    stream.write(stdin);
    stream.end();
  }
  await ended;
  const info = (await exec.inspect()) as { ExitCode: number | null };
  return { exitCode: info.ExitCode ?? -1, stdout: Buffer.concat(chunks) };
}
