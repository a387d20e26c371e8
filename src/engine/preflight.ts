// Checks before a run is accepted (AH-CAP-4, AH-INV-4): the engine answers, the runtime
// is registered, the image is present. Creates nothing. Runs on every command's cold path,
// so it asks only what it needs, in parallel: `docker info` (slow) only for a runtime other
// than runc, which every engine has.
import { ConfigError, ImageNotFoundError } from '../errors.js';
import type { ContainerRuntime, ImageFacts } from '../substrate/runtime.js';
import type { ContainerSpec } from '../substrate/container-spec.js';

export interface PreflightFacts {
  readonly engine: { readonly serverVersion: string; readonly apiVersion: string };
  readonly image: ImageFacts;
}

export async function preflight(
  runtime: ContainerRuntime,
  spec: ContainerSpec,
  signal?: AbortSignal,
): Promise<PreflightFacts> {
  const [engine, image, runtimes] = await Promise.all([
    runtime.version(signal),
    runtime.inspectImage(spec.image, signal),
    spec.engineRuntime === 'runc'
      ? Promise.resolve(undefined)
      : runtime.facts(signal).then((f) => f.runtimes),
  ]);
  if (runtimes !== undefined && !runtimes.includes(spec.engineRuntime)) {
    throw new ConfigError(
      'runtime_unavailable',
      `runtime: '${spec.runtime}' is not registered with the engine (registered: ${runtimes.join(', ')}); see docs/operators.md`,
      { field: 'runtime', value: spec.runtime },
    );
  }
  if (image === undefined) {
    throw new ImageNotFoundError(
      'image_not_found',
      `image: '${spec.image}' is not present in the engine; build it with 'cfh image build'`,
    );
  }
  return { engine, image };
}
