// Toolchain images: the sandbox recipe plus named package sets and Debian packages, built
// offline like the base (mmdebstrap). The tag is content-addressed over what is installed
// (the base recipe and the expanded package list), so `--with make` and `packages: [make]`
// name the same image, and a changed set or recipe names a new one.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../evidence/canonical-json.js';
import { ConfigError } from '../errors.js';
import { BUILDER_REVISION, type TaggedRecipe } from './recipe.js';

/**
 * The published sets (docs/operators.md, "Images and toolchains"): each is a list of
 * Debian bookworm packages. Small on purpose: a set is what a repository's own
 * `make check` / `npm test` / `pytest` needs, no more.
 */
export const PACKAGE_SETS: Readonly<Record<string, readonly string[]>> = {
  make: ['make'],
  node: ['nodejs', 'npm'],
  gcc: ['gcc', 'libc6-dev'],
  cxx: ['g++', 'libc6-dev'],
  'python-dev': ['python3-pip', 'python3-venv', 'python3-dev'],
  pytest: ['python3-pytest'],
  go: ['golang-go'],
  rust: ['rustc', 'cargo'],
};

export const TOOLCHAIN_REPO = 'cfh-toolchain';

/** The toolchain the README's examples name (`toolchain:node,make`); `make image` builds it. */
export const README_TOOLCHAIN: ToolchainRequest = { sets: ['node', 'make'], packages: [] };

export interface ToolchainRequest {
  readonly sets: readonly string[];
  readonly packages: readonly string[];
}

/** Sorted, deduplicated: the same request however it was spelled. */
export function normalizeRequest(request: ToolchainRequest): ToolchainRequest {
  for (const set of request.sets) {
    if (!Object.hasOwn(PACKAGE_SETS, set)) {
      throw new ConfigError(
        'unknown_package_set',
        `image: no package set '${set}'; the sets are ${Object.keys(PACKAGE_SETS).join(', ')} (or name Debian packages)`,
        { field: 'image.with', value: set },
      );
    }
  }
  return {
    sets: [...new Set(request.sets)].sort(),
    packages: [...new Set(request.packages)].sort(),
  };
}

/** The command that builds this toolchain, as a user types it. */
export function toolchainBuildCommand(request: ToolchainRequest): string {
  const r = normalizeRequest(request);
  return [
    'cfh image build',
    ...(r.sets.length > 0 ? [`--with ${r.sets.join(',')}`] : []),
    ...(r.packages.length > 0 ? [`--packages ${r.packages.join(',')}`] : []),
  ].join(' ');
}

export function toolchainRecipe(base: TaggedRecipe, request: ToolchainRequest): TaggedRecipe {
  const r = normalizeRequest(request);
  const extra = [...new Set([...r.sets.flatMap((s) => PACKAGE_SETS[s] ?? []), ...r.packages])]
    .filter((p) => !base.recipe.packages.includes(p))
    .sort();
  const recipe = {
    ...base.recipe,
    name: TOOLCHAIN_REPO,
    packages: [...base.recipe.packages, ...extra],
  };
  const digest = createHash('sha256')
    .update(canonicalJson({ recipe, builderRevision: BUILDER_REVISION }))
    .digest('hex');
  const tag = `t-${digest.slice(0, 16)}`;
  return {
    recipe,
    repo: TOOLCHAIN_REPO,
    tag,
    ref: `${TOOLCHAIN_REPO}:${tag}`,
    labels: {
      'cfh.image-source': 'toolchain',
      'cfh.toolchain-sets': r.sets.join(','),
      'cfh.toolchain-packages': r.packages.join(','),
      'cfh.base-recipe': base.ref,
    },
    buildCommand: toolchainBuildCommand(r),
  };
}

/** `toolchain:node,make` (sets only: the spelling a command line or README can carry). */
export function parseToolchainReference(ref: string): ToolchainRequest | undefined {
  const match = /^toolchain:([a-z0-9,+.-]+)$/.exec(ref);
  if (match?.[1] === undefined) return undefined;
  const sets = match[1].split(',').filter((s) => s !== '');
  return { sets, packages: [] };
}
