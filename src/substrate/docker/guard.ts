// The egress guard container: holds a sandbox's network namespace and its netfilter rules
// (docs/architecture.md, "Network postures"). Its own process, as its root with NET_ADMIN,
// installs the rules and then serves cfh on its stdin and stdout; the workload never gets
// these capabilities.
import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { engineError, isStatus } from './errors.js';
import { Demultiplexer } from './demux.js';
import { releaseHeld } from './host-tether.js';
import type { CreatedGuard, GuardProcess } from '../runtime.js';

export class DockerGuard implements CreatedGuard {
  readonly #container: Docker.Container;
  readonly id: string;
  #removed = false;

  constructor(container: Docker.Container) {
    this.#container = container;
    this.id = container.id;
  }

  async start(signal?: AbortSignal): Promise<GuardProcess> {
    try {
      // Attached before the start, so not a byte of the process's output is missed.
      const stream = (await this.#container.attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
        ...(signal === undefined ? {} : { abortSignal: signal }),
      })) as NodeJS.ReadWriteStream & { destroy(): void };
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stderr.resume();
      const demux = new Demultiplexer(stdout, stderr);
      stream.pipe(demux);
      const end = (): void => {
        if (!demux.writableEnded) demux.end();
      };
      stream.on('error', end);
      stream.on('close', end);
      await this.#container.start(signal === undefined ? {} : { abortSignal: signal });
      return {
        stdin: stream,
        stdout,
        close: () => {
          stream.destroy();
        },
      };
    } catch (error) {
      throw engineError(error, 'start guard');
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
    releaseHeld(this.id);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.remove();
  }
}
