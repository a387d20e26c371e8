// Loads a profile by built-in name or file path, follows `extends`, and validates the
// merged result. Pure apart from reading the files; no engine, no side effects (AH-INV-4).
import { readdirSync, existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import { BUILTIN_PROFILES_DIR } from '../paths.js';
import { Profile, ProfileFile, type ChildEntry } from './profile-schema.js';
import { describeIssues, firstUnknownKey } from './zod-issues.js';
import { INPUT_FILE_LIMITS, readInputFileSync } from './input-file.js';
import { parseYamlText, YamlSyntaxError, type ParsedYaml } from './yaml-file.js';

const BUILTIN_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const MAX_EXTENDS_DEPTH = 8;
/** A child entry's keys that are not profile fields (profile-schema.ts ChildEntry). */
const DELEGATION_KEYS: ReadonlySet<string> = new Set(['returns', 'ceiling', 'maxParallel']);

export interface LoadedProfile {
  readonly profile: Profile;
  /** Where each layer came from, base first: `builtin:default`, a file path. */
  readonly sources: readonly string[];
}

export function isBuiltinReference(ref: string): boolean {
  return BUILTIN_NAME.test(ref) && !ref.endsWith('.yaml') && !ref.endsWith('.yml');
}

export function listBuiltinProfiles(dir = BUILTIN_PROFILES_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

export function loadProfile(ref: string, dir = BUILTIN_PROFILES_DIR): LoadedProfile {
  return loadLayers(ref, [], { ref, relativeTo: process.cwd() }, dir);
}

/**
 * A child profile (AH-DEL-1): its entry is the top layer, over the profile its `extends`
 * names, the built-in `default` when it names none; never over the parent's, so nothing of
 * the parent's transfers unless the entry says it. Its name is the entry's, else
 * `PARENT.CHILD`. The entry's paths were resolved against its file's directory when that
 * file was read (readLayer), so it loads the same from anywhere.
 */
export function loadChildProfile(
  parent: string,
  child: string,
  entry: ChildEntry,
  dir = BUILTIN_PROFILES_DIR,
): LoadedProfile {
  const label = `profile ${parent}, child ${child}`;
  // What delegation adds is the parent's business, not the child's profile.
  const fields = Object.fromEntries(
    Object.entries(entry).filter(([k]) => !DELEGATION_KEYS.has(k)),
  ) as ProfileFile;
  const top: ProfileFile = { ...fields, name: entry.name ?? `${parent}.${child}` };
  return loadLayers(
    label,
    [{ file: top, source: `${parent}#children.${child}` }],
    { ref: entry.extends ?? 'default', relativeTo: '/', from: `children.${child} of ${parent}` },
    dir,
  );
}

function loadLayers(
  ref: string,
  start: { file: ProfileFile; source: string }[],
  first: { ref: string; relativeTo: string; from?: string },
  dir: string,
): LoadedProfile {
  const layers = [...start];
  let next: { ref: string; relativeTo: string; from?: string } | undefined = first;
  while (next) {
    if (layers.length >= MAX_EXTENDS_DEPTH) {
      throw new ConfigError(
        'profile_extends_too_deep',
        `profile ${ref}: 'extends' chain is deeper than ${MAX_EXTENDS_DEPTH} (cycle?)`,
        { profile: ref },
      );
    }
    const { source, file, baseDir } = readLayer(next, dir);
    if (layers.some((l) => l.source === source)) {
      throw new ConfigError(
        'profile_extends_cycle',
        `profile ${ref}: 'extends' cycle through ${source}`,
        { profile: ref },
      );
    }
    layers.unshift({ file, source });
    next =
      file.extends === undefined
        ? undefined
        : { ref: file.extends, relativeTo: baseDir, from: source };
  }
  const merged = layers.reduce<Record<string, unknown>>(
    (acc, layer) => mergeLayer(acc, stripExtends(layer.file)),
    {},
  );
  const result = Profile.safeParse(merged);
  if (!result.success) {
    throw new ConfigError(
      'invalid_profile',
      `profile ${ref}: ${describeIssues(result.error, { schema: Profile })}`,
      { profile: ref },
    );
  }
  return { profile: result.data, sources: layers.map((l) => l.source) };
}

function readLayer(
  layer: { ref: string; relativeTo: string; from?: string },
  dir: string,
): { source: string; file: ProfileFile; baseDir: string } {
  const { ref, relativeTo, from } = layer;
  const builtin = isBuiltinReference(ref);
  const filePath = builtin ? path.join(dir, `${ref}.yaml`) : path.resolve(relativeTo, ref);
  if (!existsSync(filePath)) {
    const builtins = listBuiltinProfiles(dir).join(', ');
    throw new ConfigError(
      'unknown_profile',
      `profile '${ref}' not found`,
      { profile: ref },
      builtin
        ? `the built-in profiles are ${builtins} (a profile file is named by its path: ./${ref}.yaml)`
        : `give an existing profile file, or a built-in profile (${builtins})`,
    );
  }
  // Every layer of the chain is bounded alike: a regular file of at most
  // INPUT_FILE_LIMITS.profileBytes (a FIFO or a 30 MB file is refused before it is parsed).
  // A layer named by `extends` is named by the file above it, often a repository's: no
  // symbolic link anywhere in its path, so a link the repository ships cannot make cfh
  // read a host file as a profile (AH-INV-4).
  const fromFile = from !== undefined && !builtin;
  const label = fromFile ? `'extends' in ${from}` : `profile ${ref}`;
  const text = readInputFileSync({
    label,
    file: filePath,
    maxBytes: INPUT_FILE_LIMITS.profileBytes,
    ...(fromFile ? { noSymlinks: true } : {}),
  });
  // Any file may be named here, a credential file too: a refusal says where, never what
  // (zod-issues.ts, yaml-file.ts).
  const shown = builtin ? `builtin:${ref}` : filePath;
  const what = fromFile ? `${label}: ${shown}` : `profile ${shown}`;
  const whose = fromFile ? `${label}: ` : 'profile ';
  let yaml: ParsedYaml;
  try {
    yaml = parseYamlText(text);
  } catch (error) {
    if (!(error instanceof YamlSyntaxError)) throw error;
    throw new ConfigError(
      'invalid_profile',
      `${whose}${error.in(shown)}`,
      { profile: ref },
      'fix the YAML syntax there (docs/operators.md, "Input files")',
    );
  }
  const parsed = ProfileFile.safeParse(yaml.value ?? {});
  const unknown = parsed.success ? undefined : firstUnknownKey(parsed.error, ProfileFile);
  if (unknown !== undefined) {
    const at = yaml.position(unknown.path, unknown.key);
    throw new ConfigError(
      'invalid_profile',
      `${whose}${shown}${at === undefined ? '' : `:${at.line}:${at.col}`}: ${unknown.what}`,
      { profile: ref },
      unknown.hint,
    );
  }
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_profile',
      `${what} is not a profile: ${describeIssues(parsed.error, { schema: ProfileFile, locate: yaml.locate })}`,
      { profile: ref },
    );
  }
  // Relative paths of the file resolve against its directory's real path: the same
  // directory, and an `extends` below it has no link in its path to refuse.
  const baseDir = realDir(path.dirname(filePath));
  // Mount sources in a file are relative to that file, not to wherever cfh was started;
  // so is a host tool's working directory, which is the file's directory when not given.
  const file = resolveLayerPaths(parsed.data, baseDir);
  return { source: builtin ? `builtin:${ref}` : filePath, file, baseDir };
}

/**
 * Mount sources in a file are relative to that file, not to wherever cfh was started; so
 * are a Dockerfile's paths, the CA bundle, a host tool's working directory (the file's
 * directory when not given), and a child entry's paths and `extends` file.
 */
function resolveLayerPaths<T extends Omit<ProfileFile, 'children'>>(data: T, baseDir: string): T {
  const image = data.image;
  const children = (data as ProfileFile).children;
  return {
    ...data,
    ...(data.mounts === undefined
      ? {}
      : { mounts: data.mounts.map((m) => ({ ...m, source: path.resolve(baseDir, m.source) })) }),
    ...(image !== undefined && typeof image === 'object' && 'dockerfile' in image
      ? {
          image: {
            ...image,
            dockerfile: path.resolve(baseDir, image.dockerfile),
            context: path.resolve(baseDir, image.context),
          },
        }
      : {}),
    ...(data.network?.caBundle === undefined
      ? {}
      : { network: { ...data.network, caBundle: path.resolve(baseDir, data.network.caBundle) } }),
    ...(data.hostTools === undefined
      ? {}
      : {
          hostTools: data.hostTools.map((t) => ({
            ...t,
            cwd: path.resolve(baseDir, t.cwd ?? '.'),
          })),
        }),
    ...(children === undefined
      ? {}
      : {
          children: Object.fromEntries(
            Object.entries(children).map(([name, entry]) => [
              name,
              {
                ...resolveLayerPaths(entry, baseDir),
                ...(entry.extends === undefined || isBuiltinReference(entry.extends)
                  ? {}
                  : { extends: path.resolve(baseDir, entry.extends) }),
              },
            ]),
          ),
        }),
  };
}

function realDir(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

function stripExtends(file: ProfileFile): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...file };
  delete rest.extends;
  return rest;
}

/** Objects merge key by key; arrays and scalars replace. */
export function mergeLayer(
  base: Record<string, unknown>,
  over: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    // An image is one choice, not fields to mix: a layer's `image` replaces the one below.
    // A model route is one choice: a layer's replaces its base's whole (model-schema.ts).
    const merges =
      key !== 'image' && key !== 'model' && isPlainObject(prev) && isPlainObject(value);
    out[key] = merges ? mergeLayer(prev, value) : value;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
