// A Dockerfile image through the engine's build API: the context is the tar cfh packed
// itself (context-pack.ts), RUN steps have no network, nothing is pulled (FROM names a local
// image, one of cfh's own for instance), and the tag is the content's (source.ts). The
// result is only a rootfs: every run of it gets the profile's user, seccomp, mounts and
// limits, and its ENTRYPOINT/HEALTHCHECK are reset, its VOLUMEs refused.
import { ImageBuildError, errorMessage } from '../errors.js';
import { EngineError } from '../errors.js';
import type { ContainerRuntime, ProgressListener } from '../substrate/runtime.js';
import { DOCKERFILE_ENTRY, contextTar } from './context-pack.js';
import type { BuildResult } from './build.js';
import type { DockerfileBuild } from './source.js';

export async function buildDockerfileImage(
  runtime: ContainerRuntime,
  build: DockerfileBuild,
  options: { force: boolean; onProgress: ProgressListener; signal?: AbortSignal },
): Promise<BuildResult> {
  const { onProgress, signal } = options;
  const present = await runtime.inspectImage(build.ref, signal);
  if (present !== undefined && !options.force) {
    onProgress(`${build.ref} is present (${present.id}); nothing to build`);
    return { ref: build.ref, imageId: present.id, method: 'present' };
  }
  onProgress(
    `building ${build.ref} from ${build.dockerfilePath} (context ${build.contextDir}: ${String(build.context.entries.length)} entries, ${String(build.context.bytes)} bytes; no network)`,
  );
  try {
    await runtime.buildImage(
      contextTar(build.context, build.dockerfile),
      {
        tag: build.ref,
        dockerfile: DOCKERFILE_ENTRY,
        buildArgs: build.args,
        labels: build.labels,
        network: 'none',
      },
      onProgress,
      signal,
    );
  } catch (error) {
    if (error instanceof EngineError && error.code === 'engine_unreachable') throw error;
    throw new ImageBuildError(`build of ${build.ref} failed: ${errorMessage(error)}`, error);
  }
  const built = await runtime.inspectImage(build.ref, signal);
  if (built === undefined) throw new ImageBuildError(`${build.ref} is missing after the build`);
  onProgress(`built ${build.ref} (${built.id}) from ${build.dockerfilePath}`);
  return { ref: build.ref, imageId: built.id, method: 'dockerfile' };
}
