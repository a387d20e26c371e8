// The egress guard container: holds a sandbox's network namespace and its netfilter rules
// (docs/architecture.md, "Network postures"). Runs cfh's commands as its root with
// NET_ADMIN; the workload never gets these.
import type Docker from 'dockerode';
import { PassThrough, type Readable } from 'node:stream';
import { engineError, isStatus } from './docker-errors.js';
import { execIn } from './docker-exec.js';
import { Demultiplexer } from './demux.js';
import type { StartedGuard } from './runtime.js';

export class DockerGuard implements StartedGuard {
  readonly #container: Docker.Container;
  readonly id: string;
  #removed = false;

  constructor(container: Docker.Container) {
    this.#container = container;
    this.id = container.id;
  }

  async exec(
    command: readonly string[],
    signal?: AbortSignal,
  ): Promise<{ exitCode: number; output: string }> {
    const r = await execIn(this.#container, 'guard', command, {
      workingDir: '/',
      maxOutputBytes: 1024 * 1024,
      signal,
      user: '0:0',
    });
    return {
      exitCode: r.exitCode,
      output: `${r.stdout.toString('utf8')}${r.stderr.toString('utf8')}`,
    };
  }

  async attachExec(
    command: readonly string[],
  ): Promise<{ stdin: NodeJS.WritableStream; stdout: Readable; close(): void }> {
    try {
      const exec = await this.#container.exec({
        Cmd: [...command],
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        User: '0:0',
      });
      const stream = (await exec.start({ hijack: true, stdin: true })) as NodeJS.ReadWriteStream & {
        destroy(): void;
      };
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stderr.resume();
      stream.pipe(new Demultiplexer(stdout, stderr));
      stream.on('error', () => stdout.end());
      return {
        stdin: stream,
        stdout,
        close: () => {
          stream.destroy();
        },
      };
    } catch (error) {
      throw engineError(error, 'attach exec in guard');
    }
  }

  async remove(): Promise<void> {
    if (this.#removed) return;
    try {
      await this.#container.remove({ force: true, v: true });
    } catch (error) {
      if (!isStatus(error, 404, 409)) throw engineError(error, 'remove guard');
    }
    this.#removed = true;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.remove();
  }
}

/** Runs argv in a running container; output bounded per stream; stdin optional. */
