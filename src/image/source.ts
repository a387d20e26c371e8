// One image reference → one content-addressed tag and the command that builds it
// (docs/operators.md, "Images and toolchains"). Resolved in the run plan, before any side
// effect, so a missing image is named with the command for THAT image (never a generic
// `cfh image build`), and a reference cfh did not build is said to be local-only: cfh never
// pulls.
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { DockerfileImage, ImageSource } from '../config/image-schema.js';
import { canonicalJson } from '../evidence/canonical-json.js';
import { ConfigError } from '../errors.js';
import type { ImageFacts } from '../substrate/runtime.js';
import { BUILDER_REVISION, loadRecipe, type TaggedRecipe } from './recipe.js';
import {
  DOCKERFILE_MAX_BYTES,
  readContext,
  readRegularFile,
  type ReadContext,
} from './context-pack.js';
import { parseToolchainReference, toolchainRecipe } from './toolchain.js';

export const DOCKERFILE_REPO = 'cfh-built';

export interface DockerfileBuild {
  readonly dockerfilePath: string;
  readonly contextDir: string;
  readonly args: Readonly<Record<string, string>>;
  readonly dockerfile: Buffer;
  readonly context: ReadContext;
  readonly tag: string;
  readonly ref: string;
  readonly labels: Readonly<Record<string, string>>;
}

export type ResolvedImage =
  | {
      readonly kind: 'recipe' | 'toolchain';
      readonly ref: string;
      readonly buildCommand: string;
      readonly tagged: TaggedRecipe;
    }
  | {
      readonly kind: 'dockerfile';
      readonly ref: string;
      readonly buildCommand: string;
      readonly build: DockerfileBuild;
    }
  | { readonly kind: 'local'; readonly ref: string; readonly buildCommand: undefined };

export interface ResolveOptions {
  /** Where a Dockerfile's relative paths start (a profile's directory, or the cwd). */
  readonly baseDir: string;
  /** The profile that named it, when one did: its build command is `--profile REF`. */
  readonly profileRef?: string | undefined;
}

export function resolveImage(source: ImageSource, options: ResolveOptions): ResolvedImage {
  if (typeof source === 'string') {
    const builtin = /^builtin:([a-z0-9][a-z0-9._-]*)$/.exec(source)?.[1];
    if (builtin !== undefined) {
      const tagged = loadRecipe(builtin);
      return { kind: 'recipe', ref: tagged.ref, buildCommand: tagged.buildCommand, tagged };
    }
    const request = parseToolchainReference(source);
    if (request !== undefined) {
      const tagged = toolchainRecipe(loadRecipe(), request);
      return { kind: 'toolchain', ref: tagged.ref, buildCommand: tagged.buildCommand, tagged };
    }
    return { kind: 'local', ref: source, buildCommand: undefined };
  }
  if ('dockerfile' in source) {
    const build = dockerfileBuild(source, options.baseDir);
    const buildCommand =
      options.profileRef === undefined
        ? `cfh image build --dockerfile ${build.dockerfilePath} --context ${build.contextDir}${Object.keys(
            build.args,
          )
            .map((k) => ` --build-arg ${k}=…`)
            .join('')}`
        : `cfh image build --profile ${options.profileRef}`;
    return { kind: 'dockerfile', ref: build.ref, buildCommand, build };
  }
  const tagged = toolchainRecipe(loadRecipe(), {
    sets: source.with ?? [],
    packages: source.packages ?? [],
  });
  return { kind: 'toolchain', ref: tagged.ref, buildCommand: tagged.buildCommand, tagged };
}

export function dockerfileBuild(source: DockerfileImage, baseDir: string): DockerfileBuild {
  const dockerfilePath = path.resolve(baseDir, source.dockerfile);
  const contextDir = path.resolve(baseDir, source.context);
  const dockerfile = readRegularFile(dockerfilePath, DOCKERFILE_MAX_BYTES, 'image.dockerfile');
  const context = readContext(contextDir);
  const args = source.args ?? {};
  const digest = createHash('sha256')
    .update(
      canonicalJson({
        dockerfile: createHash('sha256').update(dockerfile).digest('hex'),
        context: context.digest,
        args,
        builderRevision: BUILDER_REVISION,
      }),
    )
    .digest('hex');
  const tag = `d-${digest.slice(0, 16)}`;
  return {
    dockerfilePath,
    contextDir,
    args,
    dockerfile,
    context,
    tag,
    ref: `${DOCKERFILE_REPO}:${tag}`,
    labels: {
      'cfh.image-recipe': tag,
      'cfh.image-source': 'dockerfile',
      'cfh.dockerfile': dockerfilePath,
      'cfh.context': contextDir,
    },
  };
}

/** The one-line refusal for an image the engine does not hold. */
export function missingImageMessage(image: Pick<ResolvedImage, 'ref' | 'buildCommand'>): string {
  return image.buildCommand === undefined
    ? `image ${image.ref} is not in the engine, and cfh never pulls; build or load it locally first (docs/operators.md, "Images and toolchains")`
    : `image ${image.ref} is missing; run ${image.buildCommand}`;
}

/**
 * What an image's own config would add to a container beyond its rootfs. A VOLUME makes
 * the engine create a writable volume at create time, outside the read-only rootfs, the
 * tmpfs limits and every mount cfh checked: refused (AH-CONT-1). ENTRYPOINT and HEALTHCHECK
 * are reset by the request itself (substrate/docker/request.ts).
 */
export function checkImageConfig(image: ImageFacts, ref: string): void {
  if (image.config.volumes.length > 0) {
    throw new ConfigError(
      'image_config_refused',
      `image ${ref} declares VOLUME ${image.config.volumes.join(', ')}; cfh mounts only what it checked, so build the image without VOLUME`,
      { field: 'image', value: ref },
    );
  }
}
