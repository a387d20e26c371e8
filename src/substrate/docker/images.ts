// Images through the engine API: inspect, list cfh's, remove one. What the engine answers is
// parsed (zod), not trusted by shape: a field missing is a field absent, never a crash.
import type Docker from 'dockerode';
import { z } from 'zod';
import { engineError, isStatus } from './errors.js';
import type { ImageFacts, ImageSummary } from '../runtime.js';
import { EngineError } from '../../errors.js';

const stringList = z.array(z.string()).nullish();

const ImageConfig = z
  .looseObject({
    Volumes: z.record(z.string(), z.unknown()).nullish(),
    Entrypoint: z.union([stringList, z.string()]).optional(),
    Healthcheck: z.looseObject({ Test: stringList }).nullish(),
    OnBuild: stringList,
    Labels: z.record(z.string(), z.string()).nullish(),
  })
  .nullish();

const InspectAnswer = z.looseObject({
  Id: z.string(),
  RepoTags: stringList,
  Created: z.string(),
  Size: z.number(),
  Config: ImageConfig,
});

const ListAnswer = z.array(
  z.looseObject({
    Id: z.string(),
    RepoTags: stringList,
    Created: z.number(),
    Size: z.number(),
    Labels: z.record(z.string(), z.string()).nullish(),
  }),
);

export async function inspectImage(
  docker: Docker,
  ref: string,
  signal?: AbortSignal,
): Promise<ImageFacts | undefined> {
  signal?.throwIfAborted();
  let raw: unknown;
  try {
    raw = await docker.getImage(ref).inspect();
  } catch (error) {
    if (isStatus(error, 404)) return undefined;
    throw engineError(error, `inspect image ${ref}`);
  }
  const parsed = InspectAnswer.safeParse(raw);
  if (!parsed.success)
    throw new EngineError('engine_request_failed', `inspect image ${ref}: unexpected answer`);
  const image = parsed.data;
  const entrypoint = image.Config?.Entrypoint;
  return {
    id: image.Id,
    tags: image.RepoTags ?? [],
    createdAt: image.Created,
    sizeBytes: image.Size,
    labels: image.Config?.Labels ?? {},
    config: {
      volumes: Object.keys(image.Config?.Volumes ?? {}).sort(),
      entrypoint: typeof entrypoint === 'string' ? [entrypoint] : (entrypoint ?? []),
      healthcheck: (image.Config?.Healthcheck?.Test ?? []).filter((t) => t !== 'NONE'),
      onBuild: image.Config?.OnBuild ?? [],
    },
  };
}

/** Every image carrying `label` (any value), newest first. */
export async function listImages(
  docker: Docker,
  label: string,
  signal?: AbortSignal,
): Promise<ImageSummary[]> {
  signal?.throwIfAborted();
  let raw: unknown;
  try {
    raw = await docker.listImages({ filters: JSON.stringify({ label: [label] }) });
  } catch (error) {
    throw engineError(error, 'list images');
  }
  const parsed = ListAnswer.safeParse(raw);
  if (!parsed.success)
    throw new EngineError('engine_request_failed', 'list images: unexpected answer');
  return parsed.data
    .map((i) => ({
      id: i.Id,
      tags: (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
      createdAt: new Date(i.Created * 1000).toISOString(),
      sizeBytes: i.Size,
      labels: i.Labels ?? {},
    }))
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}

/** Removes one image by id or reference; never forced, so one a container uses stays. */
export async function removeImage(
  docker: Docker,
  ref: string,
  signal?: AbortSignal,
): Promise<void> {
  signal?.throwIfAborted();
  try {
    await docker.getImage(ref).remove({ force: false, noprune: false });
  } catch (error) {
    if (isStatus(error, 409))
      throw new EngineError(
        'image_in_use',
        `remove image ${ref}: a container uses it; remove that first`,
        {
          statusCode: 409,
          cause: error,
        },
      );
    throw engineError(error, `remove image ${ref}`);
  }
}
