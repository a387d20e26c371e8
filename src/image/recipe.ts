// The sandbox image recipe (images/sandbox/recipe.json) and its content tag: a changed
// recipe, or a changed way of building it, gives a new tag.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { IMAGES_DIR } from '../paths.js';
import { canonicalJson } from '../evidence/canonical-json.js';
import { ConfigError } from '../errors.js';
import { describeIssues } from '../config/zod-issues.js';

/** Bump when the build procedure changes in a way that changes the image. */
export const BUILDER_REVISION = 1;

export const ImageRecipe = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/),
  suite: z.string().min(1),
  variant: z.string().min(1),
  mirror: z.url(),
  pullBase: z.string().min(1),
  packages: z.array(z.string().regex(/^[a-z0-9][a-z0-9.+-]*$/)).min(1),
  exclude: z.array(z.string().min(1)),
  env: z.record(z.string(), z.string()),
});
export type ImageRecipe = z.infer<typeof ImageRecipe>;

export interface TaggedRecipe {
  readonly recipe: ImageRecipe;
  readonly repo: string;
  readonly tag: string;
  readonly ref: string;
  /** Labels the build adds to say what the image was built from (`cfh image ls`). */
  readonly labels: Readonly<Record<string, string>>;
  /** The command that builds exactly this image, for a message that finds it missing. */
  readonly buildCommand: string;
}

export function loadRecipe(name = 'sandbox', dir = IMAGES_DIR): TaggedRecipe {
  const file = path.join(dir, name, 'recipe.json');
  const raw: unknown = JSON.parse(readFileSync(file, 'utf8'));
  const parsed = ImageRecipe.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_recipe',
      `image recipe ${file}: ${describeIssues(parsed.error, { schema: ImageRecipe })}`,
    );
  }
  return tagRecipe(parsed.data);
}

export function tagRecipe(recipe: ImageRecipe): TaggedRecipe {
  const digest = createHash('sha256')
    .update(canonicalJson({ recipe, builderRevision: BUILDER_REVISION }))
    .digest('hex');
  const tag = `r-${digest.slice(0, 16)}`;
  return {
    recipe,
    repo: recipe.name,
    tag,
    ref: `${recipe.name}:${tag}`,
    labels: {},
    buildCommand: 'cfh image build',
  };
}
