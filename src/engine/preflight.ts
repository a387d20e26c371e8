// Checks before a run is accepted (AH-CAP-4, AH-INV-4): the engine answers, the runtime
// is registered, the image is present. Creates nothing.
import { ConfigError } from '../errors.js';
import { ImageNotFoundError } from '../errors.js';
import type { ContainerRuntime, EngineFacts, ImageFacts } from '../substrate/runtime.js';
import type { ContainerSpec } from '../substrate/container-spec.js';

export interface PreflightFacts {
  readonly engine: EngineFacts;
  readonly image: ImageFacts;
}

export async function preflight(
  runtime: ContainerRuntime,
  spec: ContainerSpec,
  signal?: AbortSignal,
): Promise<PreflightFacts> {
  const engine = await runtime.facts(signal);
  if (!engine.runtimes.includes(spec.engineRuntime)) {
    throw new ConfigError(
      'runtime_unavailable',
      `runtime: '${spec.runtime}' is not registered with the engine (registered: ${engine.runtimes.join(', ')}); see docs/operators.md`,
      { field: 'runtime', value: spec.runtime },
    );
  }
  const image = await runtime.inspectImage(spec.image, signal);
  if (image === undefined) {
    throw new ImageNotFoundError(
      'image_not_found',
      `image: '${spec.image}' is not present in the engine; build it with 'cfh image build'`,
    );
  }
  return { engine, image };
}
