// `cfh image build`: the sandbox image from its recipe. From a pulled base where a registry
// answers; otherwise offline from Debian packages (mmdebstrap into a rootfs tar, imported
// into the engine). The tag is the recipe's content tag, so a built tag is never stale.
import { createReadStream } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { execa } from 'execa';
import tar from 'tar-stream';
import { ImageBuildError, errorMessage } from '../errors.js';
import { removeTree } from '../remove-tree.js';
import type { ContainerRuntime, ProgressListener } from '../substrate/runtime.js';
import type { TaggedRecipe } from './recipe.js';

export type BuildMethod = 'auto' | 'offline' | 'pull';

export interface BuildResult {
  readonly ref: string;
  readonly imageId: string;
  readonly method: 'offline' | 'pull' | 'present' | 'dockerfile';
}

const PULL_TIMEOUT_MS = 20_000;

export async function buildImage(
  runtime: ContainerRuntime,
  tagged: TaggedRecipe,
  options: {
    method: BuildMethod;
    force: boolean;
    onProgress: ProgressListener;
    signal?: AbortSignal;
  },
): Promise<BuildResult> {
  const { onProgress, signal } = options;
  const present = await runtime.inspectImage(tagged.ref, signal);
  if (present !== undefined && !options.force) {
    onProgress(`${tagged.ref} is present (${present.id}); nothing to build`);
    return { ref: tagged.ref, imageId: present.id, method: 'present' };
  }
  let method: 'offline' | 'pull' = options.method === 'pull' ? 'pull' : 'offline';
  if (options.method === 'auto') {
    onProgress(`trying the registry for ${tagged.recipe.pullBase}`);
    try {
      const timeout = AbortSignal.timeout(PULL_TIMEOUT_MS);
      await runtime.pullImage(
        tagged.recipe.pullBase,
        onProgress,
        signal ? AbortSignal.any([signal, timeout]) : timeout,
      );
      method = 'pull';
    } catch (error) {
      onProgress(
        `registry unavailable (${errorMessage(error)}); building offline from Debian packages`,
      );
    }
  }
  if (method === 'pull') {
    if (options.method === 'pull')
      await runtime.pullImage(tagged.recipe.pullBase, onProgress, signal);
    await buildFromBase(runtime, tagged, onProgress, signal);
  } else {
    await buildOffline(runtime, tagged, onProgress, signal);
  }
  const built = await runtime.inspectImage(tagged.ref, signal);
  if (built === undefined) throw new ImageBuildError(`${tagged.ref} is missing after the build`);
  onProgress(`built ${tagged.ref} (${built.id}) by ${method}`);
  return { ref: tagged.ref, imageId: built.id, method };
}

function imageChanges(tagged: TaggedRecipe): string[] {
  return [
    ...Object.entries(tagged.recipe.env).map(([k, v]) => `ENV ${k}=${v}`),
    `LABEL cfh.image-recipe=${tagged.tag}`,
    // Values are names and commas only (toolchain.ts): no quoting needed.
    ...Object.entries(tagged.labels).map(([k, v]) => `LABEL ${k}="${v}"`),
    'WORKDIR /workspace',
    'CMD ["/bin/bash"]',
  ];
}

async function buildOffline(
  runtime: ContainerRuntime,
  tagged: TaggedRecipe,
  onProgress: ProgressListener,
  signal?: AbortSignal,
): Promise<void> {
  const { recipe } = tagged;
  const work = await mkdtemp(path.join(os.tmpdir(), 'cfh-image-'));
  const rootfs = path.join(work, 'rootfs.tar');
  try {
    onProgress(`mmdebstrap ${recipe.suite} (${recipe.variant}) with ${recipe.packages.join(', ')}`);
    const args = [
      `--variant=${recipe.variant}`,
      `--include=${recipe.packages.join(',')}`,
      ...recipe.exclude.map((p) => `--dpkgopt=path-exclude=${p}`),
      '--aptopt=Acquire::Retries "3"',
      recipe.suite,
      rootfs,
      recipe.mirror,
    ];
    const child = execa('mmdebstrap', args, {
      ...(signal ? { cancelSignal: signal } : {}),
      reject: false,
      all: true,
      buffer: { all: true },
    });
    child.all.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.startsWith('I: ') || line.startsWith('E: ') || line.startsWith('W: '))
          onProgress(line);
      }
    });
    const result = await child;
    if (result.exitCode !== 0) {
      const tail = result.all.split('\n').slice(-10).join('\n');
      throw new ImageBuildError(
        `mmdebstrap failed (exit ${String(result.exitCode ?? result.signal)}); it needs root or unprivileged user namespaces:\n${tail}`,
      );
    }
    onProgress(`importing ${rootfs} as ${tagged.ref}`);
    await runtime.importImage(
      createReadStream(rootfs),
      { repo: tagged.repo, tag: tagged.tag },
      imageChanges(tagged),
      signal,
    );
  } catch (error) {
    if (error instanceof ImageBuildError) throw error;
    throw new ImageBuildError(
      `offline build of ${tagged.ref} failed: ${errorMessage(error)}`,
      error,
    );
  } finally {
    await removeTree(work);
  }
}

/** The Dockerfile for the pulled-base path: the same packages and environment. */
export function dockerfileFor(tagged: TaggedRecipe): string {
  const { recipe } = tagged;
  return [
    `FROM ${recipe.pullBase}`,
    `RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${recipe.packages.join(' ')} && rm -rf /var/lib/apt/lists/*`,
    ...imageChanges(tagged),
    '',
  ].join('\n');
}

async function buildFromBase(
  runtime: ContainerRuntime,
  tagged: TaggedRecipe,
  onProgress: ProgressListener,
  signal?: AbortSignal,
): Promise<void> {
  const pack = tar.pack();
  pack.entry({ name: 'Dockerfile' }, dockerfileFor(tagged));
  pack.finalize();
  await runtime.buildImage(
    Readable.from(pack),
    { tag: tagged.ref, network: 'default', labels: tagged.labels },
    onProgress,
    signal,
  );
}
