// Images made by the engine from a stream: an imported root filesystem, a pull, a build.
// Each answers with a progress stream whose error events are the request's failure.
import type Docker from 'dockerode';
import type { Readable } from 'node:stream';
import { EngineError } from '../../errors.js';
import type { BuildOptions, ProgressListener } from '../runtime.js';
import { engineError } from './errors.js';
import { abortable } from './janitor.js';

interface ProgressEvent {
  stream?: string;
  status?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
}

function follow(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  onProgress: ProgressListener,
): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null) => {
        if (err) reject(err);
        else resolve();
      },
      (event: ProgressEvent) => {
        if (event.error !== undefined || event.errorDetail !== undefined) {
          const message = event.errorDetail?.message ?? event.error ?? 'engine stream error';
          reject(new EngineError('engine_stream_error', message));
          return;
        }
        const line = (
          event.stream ?? [event.status, event.progress].filter(Boolean).join(' ')
        ).trim();
        if (line !== '') onProgress(line);
      },
    );
  });
}

export async function importImage(
  docker: Docker,
  rootfs: Readable,
  ref: { repo: string; tag: string },
  changes: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  try {
    const stream = await docker.importImage(rootfs, {
      repo: ref.repo,
      tag: ref.tag,
      changes: [...changes],
      ...abortable(signal),
    } as unknown as object);
    await follow(docker, stream, () => undefined);
  } catch (error) {
    throw engineError(error, `import image ${ref.repo}:${ref.tag}`);
  }
}

export async function pullImage(
  docker: Docker,
  ref: string,
  onProgress: ProgressListener,
  signal?: AbortSignal,
): Promise<void> {
  try {
    const stream = await docker.pull(ref, { ...abortable(signal) });
    await follow(docker, stream, onProgress);
  } catch (error) {
    throw engineError(error, `pull ${ref}`);
  }
}

export async function buildImage(
  docker: Docker,
  context: Readable,
  options: BuildOptions,
  onProgress: ProgressListener,
  signal?: AbortSignal,
): Promise<void> {
  try {
    const stream = await docker.buildImage(context, {
      t: options.tag,
      rm: true,
      forcerm: true,
      // Never from a registry: a FROM names an image the engine holds.
      pull: false,
      networkmode: options.network,
      ...(options.dockerfile === undefined ? {} : { dockerfile: options.dockerfile }),
      ...(options.buildArgs === undefined ? {} : { buildargs: { ...options.buildArgs } }),
      ...(options.labels === undefined ? {} : { labels: { ...options.labels } }),
      ...abortable(signal),
    } as Docker.ImageBuildOptions);
    await follow(docker, stream, onProgress);
  } catch (error) {
    throw engineError(error, `build ${options.tag}`);
  }
}
