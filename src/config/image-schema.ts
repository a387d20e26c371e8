// What a profile's `image:` may name (docs/operators.md, "Images and toolchains"): a local
// image reference (`builtin:sandbox`, `toolchain:node,make`, any image the engine holds), a
// toolchain made of named package sets and Debian packages on top of the sandbox recipe, or
// a Dockerfile built through the engine API. Each resolves to one content-addressed tag.
import { z } from 'zod';

/** A Debian package name (Debian policy 5.6.1), also the shape of a set name. */
export const DebianPackage = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.+-]*$/, 'a Debian package name (lower-case letters, digits, . + -)');

export const ToolchainImage = z
  .strictObject({
    with: z
      .array(z.string().regex(/^[a-z][a-z0-9-]*$/, 'a package set name'))
      .max(32)
      .optional(),
    packages: z.array(DebianPackage).max(256).optional(),
  })
  .refine((t) => (t.with?.length ?? 0) + (t.packages?.length ?? 0) > 0, {
    error: "name at least one package set ('with') or Debian package ('packages')",
  });
export type ToolchainImage = z.infer<typeof ToolchainImage>;

/** Build arguments: a name the Dockerfile's ARG can carry, a bounded value. */
const buildArgName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an ARG name');

export const DockerfileImage = z.strictObject({
  dockerfile: z.string().min(1),
  context: z.string().min(1),
  args: z.record(buildArgName, z.string().max(4096)).optional(),
});
export type DockerfileImage = z.infer<typeof DockerfileImage>;

export const ImageSource = z.union([z.string().min(1), ToolchainImage, DockerfileImage]);
export type ImageSource = z.infer<typeof ImageSource>;
