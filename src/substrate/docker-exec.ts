// `docker exec` of an argv in a running container: output bounded per stream (what exceeds
// the bound is counted, not kept), stdin optional, abortable.
import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { onAbort } from '../abort.js';
import { engineError } from './docker-errors.js';
import { Demultiplexer } from './demux.js';
import type { ExecOptions, ExecResult } from './runtime.js';

export interface ExecIn extends ExecOptions {
  readonly user?: string;
  /** The exec's environment (added to the container's). */
  readonly env?: Readonly<Record<string, string>> | undefined;
}

export async function execIn(
  container: Docker.Container,
  name: string,
  argv: readonly string[],
  options: ExecIn,
): Promise<ExecResult> {
  options.signal?.throwIfAborted();
  try {
    const exec = await container.exec({
      Cmd: [...argv],
      WorkingDir: options.workingDir,
      AttachStdin: options.stdin !== undefined,
      AttachStdout: true,
      AttachStderr: true,
      ...(options.user === undefined ? {} : { User: options.user }),
      ...(options.env === undefined
        ? {}
        : { Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`) }),
    });
    const stream = (await exec.start({
      hijack: true,
      stdin: options.stdin !== undefined,
    })) as NodeJS.ReadWriteStream & {
      destroy(): void;
      readonly destroyed: boolean;
    };
    const out = boundedCollector(options.maxOutputBytes);
    const err = boundedCollector(options.maxOutputBytes);
    stream.pipe(new Demultiplexer(out.sink, err.sink));
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
    });
    // An abort while the exec was created or attached ends it too, at once.
    const aborting = onAbort(options.signal, () => {
      stream.destroy();
    });
    try {
      if (options.stdin !== undefined && !stream.destroyed) {
        stream.write(options.stdin);
        stream.end();
      }
      await ended;
    } finally {
      aborting[Symbol.dispose]();
    }
    options.signal?.throwIfAborted();
    const info = (await exec.inspect()) as { ExitCode: number | null };
    return {
      exitCode: info.ExitCode ?? -1,
      stdout: out.bytes(),
      stderr: err.bytes(),
      stdoutTruncated: out.truncated(),
      stderrTruncated: err.truncated(),
    };
  } catch (error) {
    if (options.signal?.aborted === true) throw options.signal.reason;
    throw engineError(error, `exec in ${name}`);
  }
}

/** Keeps the first `limit` bytes written to it and whether more came. */
function boundedCollector(limit: number): {
  sink: PassThrough;
  bytes(): Buffer;
  truncated(): boolean;
} {
  const chunks: Buffer[] = [];
  let kept = 0;
  let seen = 0;
  const sink = new PassThrough();
  sink.on('data', (c: Buffer) => {
    seen += c.length;
    if (kept < limit) {
      const part = c.subarray(0, limit - kept);
      chunks.push(part);
      kept += part.length;
    }
  });
  return { sink, bytes: () => Buffer.concat(chunks), truncated: () => seen > kept };
}
