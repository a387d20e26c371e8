// Checks before a run is accepted (AH-CAP-4, AH-INV-4): the engine answers, the runtime
// is registered, the image is present. Creates nothing. Runs on every command's cold path,
// so it asks only what it needs, in parallel: `docker info` (slow) only for a runtime other
// than runc, which every engine has.
import { ConfigError, ImageNotFoundError } from '../../errors.js';
import type { ContainerRuntime, ImageFacts } from '../../substrate/runtime.js';
import { checkImageConfig, missingImageMessage, type ResolvedImage } from '../../image/source.js';
import type { ContainerSpec, SeccompEnforcement } from '../../substrate/container-spec.js';

type ImageName = Pick<ResolvedImage, 'ref' | 'buildCommand'>;
export interface PreflightImage extends ImageName {
  readonly guard: ImageName | undefined;
  /** The file-tool container's image (cfh's sandbox image), asked for when a file tool is named. */
  readonly fileTools?: ImageName | undefined;
  readonly fileToolsUsed?: boolean | undefined;
}

export interface PreflightFacts {
  readonly engine: { readonly serverVersion: string; readonly apiVersion: string };
  readonly image: ImageFacts;
  /** The egress guard's image (cfh's sandbox image), when the posture has network. */
  readonly guardImage?: ImageFacts | undefined;
  readonly seccompEnforcement: SeccompEnforcement;
  /** The registered runtime's arguments, when they were looked up (non-runc). */
  readonly runtimeArgs?: readonly string[];
  /**
   * The binary the engine runs for each runtime name the run's containers use (non-runc:
   * the run's, and the plain name its tool containers without a network use). The name a
   * profile asks for proves nothing; the assurance level rests on these.
   */
  readonly runtimeBinaries?: Readonly<Record<string, string>>;
}

export async function preflight(
  runtime: ContainerRuntime,
  spec: ContainerSpec,
  signal?: AbortSignal,
  image: PreflightImage = { ref: spec.image, buildCommand: undefined, guard: undefined },
): Promise<PreflightFacts> {
  const own = (name: ImageName | undefined): Promise<ImageFacts | undefined> =>
    name === undefined || name.ref === spec.image
      ? Promise.resolve(undefined)
      : runtime.inspectImage(name.ref, signal);
  const fileTools = image.fileToolsUsed === true ? image.fileTools : undefined;
  const [engine, present, guard, files, facts] = await Promise.all([
    runtime.version(signal),
    runtime.inspectImage(spec.image, signal),
    own(image.guard),
    own(fileTools),
    spec.engineRuntime === 'runc' ? Promise.resolve(undefined) : runtime.facts(signal),
  ]);
  if (facts !== undefined && !facts.runtimes.includes(spec.engineRuntime)) {
    throw new ConfigError(
      'runtime_unavailable',
      `runtime: '${spec.runtime}' is not registered with the engine (registered: ${facts.runtimes.join(', ')}); see docs/operators.md`,
      { field: 'runtime', value: spec.runtime },
    );
  }
  // The command for THAT image (a toolchain's sets, a Dockerfile's paths), or, for a
  // reference cfh did not build, that cfh never pulls it.
  if (present === undefined)
    throw new ImageNotFoundError('image_not_found', missingImageMessage(image));
  checkImageConfig(present, spec.image);
  if (image.guard !== undefined && image.guard.ref !== spec.image && guard === undefined)
    throw new ImageNotFoundError(
      'image_not_found',
      `${missingImageMessage(image.guard)} (the egress guard's image)`,
    );
  if (fileTools !== undefined && fileTools.ref !== spec.image && files === undefined)
    throw new ImageNotFoundError(
      'image_not_found',
      `${missingImageMessage(fileTools)} (the file tools' image)`,
    );
  const guardImage = image.guard === undefined ? undefined : (guard ?? present);
  if (facts === undefined)
    return { engine, image: present, guardImage, seccompEnforcement: 'kernel-seccomp' };
  const args = facts.runtimeArgs[spec.engineRuntime] ?? [];
  const names = [...new Set([spec.engineRuntime, spec.runtime])];
  return {
    engine,
    image: present,
    guardImage,
    seccompEnforcement: seccompEnforcementOf(spec.runtime, args),
    runtimeArgs: args,
    runtimeBinaries: Object.fromEntries(names.map((n) => [n, facts.runtimePaths[n] ?? ''])),
  };
}

/**
 * runc installs the filter in the kernel. runsc installs OCI filters inside the sandbox
 * only when started with --oci-seccomp; otherwise the workload meets gVisor's own syscall
 * implementation and the profile's filter is not applied.
 */
export function seccompEnforcementOf(
  runtime: 'runc' | 'runsc',
  runtimeArgs: readonly string[],
): SeccompEnforcement {
  if (runtime === 'runc') return 'kernel-seccomp';
  return runtimeArgs.some(
    (a) => a === '--oci-seccomp' || a === '--oci-seccomp=true' || a === '-oci-seccomp',
  )
    ? 'gvisor-oci-seccomp'
    : 'not-applied-gvisor';
}
