// `cfh image build | ls | rm` (docs/operators.md, "Images and toolchains"): the sandbox
// image, a toolchain (`--with SETS`, `--packages PKGS`), a Dockerfile image, or whatever a
// profile's `image:` names; the images cfh built, listed; one of them, or all, removed.
import path from 'node:path';
import { loadProfile } from '../../config/profile-loader.js';
import { ConfigError } from '../../errors.js';
import { buildImage, type BuildMethod, type BuildResult } from '../../image/build.js';
import { buildDockerfileImage } from '../../image/build-dockerfile.js';
import { resolveImage, type ResolvedImage } from '../../image/source.js';
import type { ImageSummary } from '../../substrate/runtime.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

/** Every image cfh builds carries this label (build.ts, source.ts). */
export const CFH_IMAGE_LABEL = 'cfh.image-recipe';

export interface ImageBuildArgs {
  readonly method: string;
  readonly force: boolean;
  readonly json: boolean;
  readonly with?: readonly string[] | undefined;
  readonly packages?: readonly string[] | undefined;
  readonly dockerfile?: string | undefined;
  readonly context?: string | undefined;
  readonly buildArgs?: readonly string[] | undefined;
  readonly profile?: string | undefined;
}

const METHODS: readonly BuildMethod[] = ['auto', 'offline', 'pull'];

function isMethod(value: string): value is BuildMethod {
  return METHODS.some((m) => m === value);
}

/** `a,b` and repeated flags alike. */
function list(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

function parseBuildArgs(values: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const eq = v.indexOf('=');
    if (eq <= 0)
      throw new ConfigError('invalid_override', `--build-arg: '${v}' is not NAME=VALUE`, {
        field: '--build-arg',
      });
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

function target(args: ImageBuildArgs, cwd: string): ResolvedImage {
  const chosen = [
    args.profile !== undefined,
    args.dockerfile !== undefined,
    list(args.with).length + list(args.packages).length > 0,
  ].filter(Boolean).length;
  if (chosen > 1)
    throw new ConfigError(
      'invalid_override',
      'image build: give one of --profile, --dockerfile, or --with/--packages',
      { field: '--profile' },
    );
  if (args.profile !== undefined) {
    const ref = args.profile;
    const { profile } = loadProfile(ref.includes('/') ? path.resolve(cwd, ref) : ref);
    return resolveImage(profile.image, { baseDir: cwd, profileRef: ref });
  }
  if (args.dockerfile !== undefined) {
    const dockerfile = path.resolve(cwd, args.dockerfile);
    return resolveImage(
      {
        dockerfile,
        context: path.resolve(cwd, args.context ?? path.dirname(dockerfile)),
        args: parseBuildArgs(args.buildArgs),
      },
      { baseDir: cwd },
    );
  }
  const sets = list(args.with);
  const packages = list(args.packages);
  if (sets.length + packages.length > 0)
    return resolveImage({ with: sets, packages }, { baseDir: cwd });
  return resolveImage('builtin:sandbox', { baseDir: cwd });
}

export async function imageBuildCommand(args: ImageBuildArgs, deps: CliDeps): Promise<number> {
  try {
    if (!isMethod(args.method)) {
      deps.printer.err(
        `cfh: --method: '${args.method}' is not auto, offline or pull; see cfh image build --help`,
      );
      return 2;
    }
    const image = target(args, deps.env.workingDirectory ?? process.cwd());
    const onProgress = (line: string): void => {
      deps.printer.err(`[image] ${line}`);
    };
    const started = performance.now();
    let result: BuildResult;
    if (image.kind === 'local') {
      throw new ConfigError(
        'image_not_cfh',
        `image ${image.ref} is a reference cfh does not build (and never pulls); name a toolchain, a Dockerfile or a profile that does`,
        { field: 'image', value: image.ref },
      );
    } else if (image.kind === 'dockerfile') {
      result = await buildDockerfileImage(deps.runtime(), image.build, {
        force: args.force,
        onProgress,
        signal: deps.signal,
      });
    } else {
      result = await buildImage(deps.runtime(), image.tagged, {
        method: args.method,
        force: args.force,
        onProgress,
        signal: deps.signal,
      });
    }
    const seconds = Number(((performance.now() - started) / 1000).toFixed(1));
    const built = await deps.runtime().inspectImage(result.ref, deps.signal);
    const sizeBytes = built?.sizeBytes ?? 0;
    if (args.json) deps.printer.json({ ...result, kind: image.kind, seconds, sizeBytes });
    else
      deps.printer.out(
        `${result.ref} ${result.imageId} (${result.method}, ${String(seconds)} s, ${mib(sizeBytes)})`,
      );
    return 0;
  } catch (error) {
    const code = reportFailure(error, deps, { json: args.json });
    return code === 125 ? 1 : code;
  }
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
}

/** What an image was built from, said from its labels. */
export function builtFrom(labels: Readonly<Record<string, string>>): string {
  const source = labels['cfh.image-source'];
  if (source === 'toolchain') {
    const sets = labels['cfh.toolchain-sets'] ?? '';
    const packages = labels['cfh.toolchain-packages'] ?? '';
    return [
      'toolchain',
      ...(sets === '' ? [] : [`--with ${sets}`]),
      ...(packages === '' ? [] : [`--packages ${packages}`]),
    ].join(' ');
  }
  if (source === 'dockerfile')
    return `dockerfile ${labels['cfh.dockerfile'] ?? '?'} (context ${labels['cfh.context'] ?? '?'})`;
  return 'recipe images/sandbox';
}

interface ImageRow {
  readonly ref: string;
  readonly id: string;
  readonly builtFrom: string;
  readonly sizeBytes: number;
  readonly createdAt: string;
}

function rows(images: readonly ImageSummary[]): ImageRow[] {
  return images.flatMap((i) =>
    (i.tags.length === 0 ? [i.id] : i.tags).map((ref) => ({
      ref,
      id: i.id,
      builtFrom: builtFrom(i.labels),
      sizeBytes: i.sizeBytes,
      createdAt: i.createdAt,
    })),
  );
}

export async function imageListCommand(args: { json: boolean }, deps: CliDeps): Promise<number> {
  try {
    const list = rows(await deps.runtime().listImages(CFH_IMAGE_LABEL, deps.signal));
    if (args.json) deps.printer.json(list);
    else
      for (const r of list)
        deps.printer.out(
          `${r.ref.padEnd(36)} ${mib(r.sizeBytes).padStart(8)}  ${r.createdAt}  ${r.builtFrom}`,
        );
    return 0;
  } catch (error) {
    const code = reportFailure(error, deps, { json: args.json });
    return code === 125 ? 1 : code;
  }
}

export async function imageRemoveCommand(
  args: { refs: readonly string[]; all: boolean; json: boolean },
  deps: CliDeps,
): Promise<number> {
  try {
    if (args.all === args.refs.length > 0) {
      deps.printer.err('cfh: image rm: give REF... or --all; see cfh image rm --help');
      return 2;
    }
    const runtime = deps.runtime();
    let refs: string[];
    if (args.all)
      refs = rows(await runtime.listImages(CFH_IMAGE_LABEL, deps.signal)).map((r) => r.ref);
    else {
      // Every name is checked before any is removed: a refusal removes nothing.
      for (const ref of args.refs) {
        const image = await runtime.inspectImage(ref, deps.signal);
        if (image === undefined)
          throw new ConfigError(
            'image_not_found',
            `image ${ref} is not in the engine; see cfh image ls`,
            {
              field: 'image',
              value: ref,
            },
          );
        if (image.labels[CFH_IMAGE_LABEL] === undefined)
          throw new ConfigError(
            'image_not_cfh',
            `image ${ref} was not built by cfh; cfh image rm removes only the images cfh image ls lists`,
            { field: 'image', value: ref },
          );
      }
      refs = [...args.refs];
    }
    for (const ref of refs) await runtime.removeImage(ref, deps.signal);
    if (args.json) deps.printer.json({ removed: refs });
    else for (const ref of refs) deps.printer.out(`removed ${ref}`);
    return 0;
  } catch (error) {
    const code = reportFailure(error, deps, { json: args.json });
    return code === 125 ? 1 : code;
  }
}
