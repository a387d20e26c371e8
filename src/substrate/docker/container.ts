// A sandbox container through the engine API: created, attached (before start, so no
// output is lost), started behind the mount gate where the spec asks for one
// (mount-gate.ts), waited for, exec'd into, killed, removed (idempotent).
import type Docker from 'dockerode';
import { PassThrough, Transform, type TransformCallback } from 'node:stream';
import type { ContainerSpec } from '../container-spec.js';
import { engineError, isStatus } from './errors.js';
import { execIn } from './exec.js';
import { releaseHeld } from './host-tether.js';
import { Demultiplexer, TerminalStream } from './demux.js';
import {
  GATE_END,
  GATE_REPORT_MAX_BYTES,
  GATE_TIMEOUT_MS,
  GATE_WORD,
  recheckSources,
  verifyGateReport,
} from '../mount-gate.js';
import type {
  AttachOptions,
  AttachedOutput,
  ContainerExit,
  CreatedContainer,
  ExecOptions,
  ExecResult,
  StartOptions,
  StartedContainer,
  TerminalSize,
} from '../runtime.js';
import { ContainmentError } from '../../errors.js';

function abortable(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal === undefined ? {} : { abortSignal: signal };
}

interface AttachedIo extends AttachedOutput {
  /** The gate's report lines, once it has printed them (gated containers only). */
  readonly report: Promise<string[]> | undefined;
  readonly stdin: NodeJS.WritableStream | undefined;
}

export class DockerCreatedContainer implements CreatedContainer {
  readonly #container: Docker.Container;
  readonly #spec: ContainerSpec;
  readonly id: string;
  readonly name: string;
  #io: AttachedIo | undefined;
  /** What is forwarded to the workload's stdin once it runs (spec `stdin: forwarded`). */
  #input: NodeJS.ReadableStream | undefined;
  #removed = false;

  constructor(container: Docker.Container, spec: ContainerSpec) {
    this.#container = container;
    this.#spec = spec;
    this.id = container.id;
    this.name = spec.name;
  }

  get #gated(): boolean {
    return this.#spec.mountCheck === 'gate';
  }

  async attach(signal?: AbortSignal, options: AttachOptions = {}): Promise<AttachedOutput> {
    if (options.stdin !== undefined && this.#spec.stdin !== 'forwarded')
      throw new Error(`${this.name} was not created to take a forwarded stdin`);
    const io = await this.#attach(signal);
    this.#input = options.stdin;
    return { stdout: io.stdout, stderr: io.stderr };
  }

  async #attach(signal: AbortSignal | undefined): Promise<AttachedIo> {
    if (this.#io !== undefined) return this.#io;
    const gated = this.#gated;
    const withStdin = gated || this.#spec.stdin === 'forwarded';
    const tty = this.#spec.tty === true;
    try {
      const raw = (await this.#container.attach({
        stream: true,
        stdout: true,
        stderr: true,
        logs: false,
        ...(withStdin ? { stdin: true, hijack: true } : {}),
        ...abortable(signal),
      })) as NodeJS.ReadWriteStream & NodeJS.ReadableStream;
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      const gate = gated ? new GateReport(tty) : undefined;
      // A TTY's stream has no frames: it is the workload's stdout, stderr stays empty.
      const demux = tty
        ? new TerminalStream(gate ?? stdout, stderr)
        : new Demultiplexer(gate ?? stdout, stderr);
      if (gate !== undefined) gate.pipe(stdout);
      raw.pipe(demux);
      // A stream that errors or closes without ending still ends both outputs.
      const end = (): void => {
        if (!demux.writableEnded) demux.end();
      };
      raw.on('close', end);
      raw.on('error', end);
      this.#io = { stdout, stderr, report: gate?.report, stdin: withStdin ? raw : undefined };
      return this.#io;
    } catch (error) {
      throw engineError(error, `attach ${this.name}`);
    }
  }

  async start(signal?: AbortSignal, options: StartOptions = {}): Promise<StartedContainer> {
    let io = this.#io;
    if (this.#gated && io === undefined) {
      // Nobody reads this container's output (a tool container): drain it after the gate.
      io = await this.#attach(signal);
      io.stdout.resume();
      io.stderr.resume();
    }
    try {
      await this.#container.start({ ...abortable(signal) });
    } catch (error) {
      recheckSources(this.#spec);
      const failed = engineError(error, `start ${this.name}`);
      // The engine (or runc while it mounts) found a checked source gone when it bound it:
      // the source changed between the check and the start, even if it is back by the time
      // recheckSources looks. The engine's and runc's wordings differ; both name the path.
      const gone = /does not exist|no such file/i.test(failed.message)
        ? this.#spec.mounts.find((m) => namesPath(failed.message, m.source))
        : undefined;
      if (gone !== undefined) {
        throw new ContainmentError(
          'mount_source_changed',
          `mount source ${gone.source} was not there when the engine bound it; it changed since cfh checked it, so nothing ran`,
          { source: gone.source },
        );
      }
      throw failed;
    }
    const started = new DockerStartedContainer(this.#container, this.#spec, () => this.remove());
    const size = this.#spec.tty === true ? options.terminalSize : undefined;
    const resize = async (): Promise<void> => {
      // Best effort: a terminal of the wrong size is no reason to fail the run.
      if (size !== undefined) await started.resize(size, signal).catch(() => undefined);
    };
    if (io?.report !== undefined) await this.#passGate(io, signal, resize);
    else await resize();
    if (io !== undefined) this.#forwardStdin(io);
    return started;
  }

  /** Waits for the gate's report, compares it, and lets the workload run, or stops it. */
  async #passGate(
    io: AttachedIo,
    signal: AbortSignal | undefined,
    beforeWord: () => Promise<void>,
  ): Promise<void> {
    const timeout = AbortSignal.timeout(GATE_TIMEOUT_MS);
    const stop = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    try {
      const lines = await abortablePromise(io.report ?? Promise.resolve([]), stop);
      verifyGateReport(this.#spec, lines);
    } catch (error) {
      await this.#container.kill({ signal: 'SIGKILL' }).catch(() => undefined);
      if (signal?.aborted === true) throw signal.reason;
      if (error instanceof ContainmentError) throw error;
      throw new ContainmentError(
        'mount_gate_failed',
        `the start gate of ${this.name} did not report what is mounted: ${error instanceof Error ? error.message : String(error)}`,
        {},
      );
    }
    await beforeWord();
    io.stdin?.write(GATE_WORD);
  }

  /**
   * The workload runs: its stdin is what cfh was given, from here (nothing of it reached the
   * gate), and ends with it; without a forwarded stdin it ends now (the gate's word was all).
   */
  #forwardStdin(io: AttachedIo): void {
    const raw = io.stdin;
    if (raw === undefined) return;
    const input = this.#input;
    if (input === undefined) {
      raw.end();
      return;
    }
    // pipe() ends the attach's write side (the workload's end of file) when the input
    // ends, and lets go of the input when the container's stream closes (killed, exited).
    input.pipe(raw, { end: true });
  }

  async remove(): Promise<void> {
    if (this.#removed) return;
    try {
      await this.#container.remove({ force: true, v: true });
      this.#removed = true;
      releaseHeld(this.id);
    } catch (error) {
      if (isStatus(error, 404)) {
        this.#removed = true;
        releaseHeld(this.id);
        return;
      }
      // 409: removal already in progress elsewhere; that is the outcome we want.
      if (isStatus(error, 409)) return;
      throw engineError(error, `remove ${this.name}`);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.remove();
  }
}

/**
 * The first lines of a gated container's stdout are the gate's report, up to GATE_END;
 * they are taken off the stream (the workload has not run yet, so nothing of its output
 * is lost) and everything after passes through.
 */
class GateReport extends Transform {
  readonly report: Promise<string[]>;
  #resolve!: (lines: string[]) => void;
  #reject!: (error: Error) => void;
  #head: Buffer = Buffer.alloc(0);
  #done = false;
  /** A terminal's line ending (its output turns \n into \r\n). */
  readonly #eol: string;
  /**
   * On a TTY the terminal echoes cfh's word before the gate's `read` returns, so before any
   * byte of the workload: taken off the stream like the report.
   */
  #echo: Buffer | undefined;

  constructor(tty: boolean) {
    super();
    this.#eol = tty ? '\r\n' : '\n';
    this.#echo = tty ? Buffer.from(GATE_WORD.replace('\n', '\r\n')) : undefined;
    this.report = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Settled by the gate or by the end of the stream; unobserved rejections are fine.
    this.report.catch(() => undefined);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (this.#done) {
      this.#passEcho(chunk, done);
      return;
    }
    this.#head = Buffer.concat([this.#head, chunk]);
    const marker = this.#head.indexOf(`${GATE_END}${this.#eol}`);
    if (marker < 0) {
      if (this.#head.length > GATE_REPORT_MAX_BYTES) {
        this.#done = true;
        this.#reject(new Error('the gate report is too long'));
      }
      done();
      return;
    }
    this.#done = true;
    const lines = this.#head.subarray(0, marker).toString('utf8').split(this.#eol);
    this.#resolve(lines.filter((l) => l !== ''));
    const rest = this.#head.subarray(marker + GATE_END.length + this.#eol.length);
    this.#head = Buffer.alloc(0);
    this.#passEcho(rest, done);
  }

  /** Passes `chunk` on, less the terminal's echo of the word if that is what starts it. */
  #passEcho(chunk: Buffer, done: TransformCallback): void {
    const echo = this.#echo;
    if (echo === undefined) {
      done(null, chunk.length > 0 ? chunk : undefined);
      return;
    }
    const head = Buffer.concat([this.#head, chunk]);
    if (head.length < echo.length && echo.subarray(0, head.length).equals(head)) {
      this.#head = head;
      done();
      return;
    }
    this.#echo = undefined;
    this.#head = Buffer.alloc(0);
    const rest = head.subarray(0, echo.length).equals(echo) ? head.subarray(echo.length) : head;
    done(null, rest.length > 0 ? rest : undefined);
  }

  override _flush(done: TransformCallback): void {
    if (!this.#done) this.#reject(new Error('the container ended before its gate reported'));
    else if (this.#head.length > 0) this.push(this.#head);
    done();
  }
}

function abortablePromise<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

class DockerStartedContainer implements StartedContainer {
  readonly #container: Docker.Container;
  readonly #spec: ContainerSpec;
  readonly #remove: () => Promise<void>;
  readonly id: string;
  readonly name: string;

  constructor(container: Docker.Container, spec: ContainerSpec, remove: () => Promise<void>) {
    this.#container = container;
    this.#spec = spec;
    this.#remove = remove;
    this.id = container.id;
    this.name = spec.name;
  }

  async wait(signal?: AbortSignal): Promise<ContainerExit> {
    try {
      const result = (await this.#container.wait({
        condition: 'not-running',
        ...abortable(signal),
      })) as unknown as { StatusCode: number; Error?: { Message?: string } | null };
      const state = await this.#container.inspect();
      return {
        exitCode: result.StatusCode,
        oomKilled: state.State.OOMKilled,
        error: result.Error?.Message ?? state.State.Error,
      };
    } catch (error) {
      throw engineError(error, `wait ${this.name}`);
    }
  }

  exec(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    // A gated container's own env is the image's (the gate hands the spec's env to the
    // workload only), so an exec that names no env of its own carries the spec's.
    const env = options.env ?? (this.#spec.mountCheck === 'gate' ? this.#spec.env : undefined);
    return execIn(this.#container, this.name, argv, { ...options, env });
  }

  async resize(size: TerminalSize, signal?: AbortSignal): Promise<void> {
    try {
      await this.#container.resize({ h: size.rows, w: size.columns, ...abortable(signal) });
    } catch (error) {
      // 404: gone; 409: not running. A terminal resized as the workload ends is no error.
      if (isStatus(error, 404, 409)) return;
      throw engineError(error, `resize ${this.name}`);
    }
  }

  async running(signal?: AbortSignal): Promise<boolean> {
    try {
      const state = await this.#container.inspect(abortable(signal));
      return state.State.Running;
    } catch (error) {
      if (isStatus(error, 404)) return false;
      throw engineError(error, `inspect ${this.name}`);
    }
  }

  async kill(signal = 'SIGKILL'): Promise<void> {
    try {
      await this.#container.kill({ signal });
    } catch (error) {
      // 409: not running; 404: gone. Either way it is no longer running.
      if (isStatus(error, 404, 409)) return;
      throw engineError(error, `kill ${this.name}`);
    }
  }

  remove(): Promise<void> {
    return this.#remove();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#remove();
  }
}

/** Whether `message` names `source` as a whole path (not `/a/data` inside `/a/data2`). */
function namesPath(message: string, source: string): boolean {
  for (let at = message.indexOf(source); at >= 0; at = message.indexOf(source, at + 1)) {
    const next = message.charAt(at + source.length);
    if (next === '' || next === '"' || next === ':' || next === "'" || /\s/.test(next)) return true;
  }
  return false;
}
