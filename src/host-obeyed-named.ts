// Class 9, what a held configuration names as code to run: `.yarnrc.yml` is on the list
// (host-obeyed.ts) because its `yarnPath` is the program every yarn command runs, and that
// program is usually a file the project vendors (`.yarn/releases/yarn-4.5.0.cjs`). Holding
// the setting and not the program it names would let the sandbox rewrite the program
// instead. So, as host-obeyed-git.ts does for git's own settings (core.hooksPath, command
// paths), each path inside the workspace that a listed configuration at its top (or in a
// directory above it) names as code its tool runs is held beside the names: an apply writes
// it only when the operator names it, and an rw run that changes it says so (watched, not
// mounted read-only: host-obeyed-mounts.ts says why).
//
// Read from the host workspace as the tool reads it, with no tool run: the files are small
// text, parsed here; a file that does not parse names nothing (the tool refuses it too).
// The settings read, each one whose value is a program or module the tool runs:
// - `.yarnrc.yml` `yarnPath` and each `plugins[].path` (yarn berry loads both on every
//   command), `.yarnrc` `yarn-path` (yarn 1 hands every command to it);
// - `.npmrc` `script-shell` (the shell npm runs every script with) and the modules
//   `node-options` preloads (`--require`, `-r`, `--import`, `--loader`) in every script;
// - `rust-toolchain.toml` / `rust-toolchain` `[toolchain] path` (the toolchain directory
//   every cargo and rustc in the directory runs from);
// - mise's `[env] _.source` (scripts the shell runs on entering the directory).
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { GitHeldPath } from './host-obeyed-git.js';

/** A configuration past this is not one a person wrote; it names nothing. */
const CONFIG_MAX_BYTES = 256 * 1024;

/** A path a held configuration names as code its tool runs, relative to the workspace. */
export type NamedHeldPath = GitHeldPath;

interface Setting {
  /** The tool that obeys it. */
  readonly tool: string;
  /** The configuration file's name, read at the workspace top and above it. */
  readonly file: string;
  /** The values it names as programs, each with the setting's name. */
  readonly read: (text: string) => readonly { readonly value: string; readonly key: string }[];
}

const YarnBerry = z.looseObject({
  yarnPath: z.string().optional(),
  plugins: z
    .array(z.union([z.string(), z.looseObject({ path: z.string().optional() })]))
    .optional(),
});

function yarnBerry(text: string): { value: string; key: string }[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    return [];
  }
  const parsed = YarnBerry.safeParse(doc);
  if (!parsed.success) return [];
  const out: { value: string; key: string }[] = [];
  if (parsed.data.yarnPath !== undefined)
    out.push({ value: parsed.data.yarnPath, key: 'yarnPath' });
  for (const p of parsed.data.plugins ?? []) {
    const value = typeof p === 'string' ? p : p.path;
    if (value !== undefined) out.push({ value, key: 'plugins' });
  }
  return out;
}

/** `key value` or `key=value` lines (`.yarnrc`, `.npmrc`), quotes taken off. */
function lines(text: string): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z0-9_.-]+)\s*(?:=\s*|\s+)(.*?)\s*$/.exec(raw);
    if (m?.[1] === undefined || m[2] === undefined) continue;
    out.push({ key: m[1].toLowerCase(), value: m[2].replace(/^(["'])(.*)\1$/, '$2') });
  }
  return out;
}

/** The modules a `node-options` value preloads. */
function preloads(options: string): string[] {
  const words = options.split(/\s+/).filter((w) => w !== '');
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 1) {
    const w = words[i] ?? '';
    const eq = /^(--require|--import|--loader|--experimental-loader|-r)=(.+)$/.exec(w);
    if (eq?.[2] !== undefined) out.push(eq[2]);
    else if (/^(--require|--import|--loader|--experimental-loader|-r)$/.test(w)) {
      const next = words[i + 1];
      if (next !== undefined) out.push(next);
      i += 1;
    }
  }
  return out;
}

function npmrc(text: string): { value: string; key: string }[] {
  return lines(text).flatMap(({ key, value }) => {
    if (key === 'script-shell') return [{ value, key }];
    if (key === 'node-options') return preloads(value).map((v) => ({ value: v, key }));
    return [];
  });
}

function rustToolchain(text: string): { value: string; key: string }[] {
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(raw);
    if (header?.[1] !== undefined) section = header[1].trim();
    const m = /^\s*path\s*=\s*["']([^"']+)["']/.exec(raw);
    if (m?.[1] !== undefined && section === 'toolchain') return [{ value: m[1], key: 'path' }];
  }
  return [];
}

/**
 * mise's `[env]` `_.source` (a script or a list of them, run by the shell on entering the
 * directory with `mise activate`), in the plain forms: `_.source = "x"` or `["x", "y"]`
 * under `[env]`, `source = ...` under `[env._]`. A table form (`{ path = ... }`) is not read.
 */
function miseSource(text: string): { value: string; key: string }[] {
  let section = '';
  const out: { value: string; key: string }[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(raw);
    if (header?.[1] !== undefined) section = header[1].trim();
    const key =
      section === 'env'
        ? /^\s*_\.source\s*=(.*)$/
        : section === 'env._'
          ? /^\s*source\s*=(.*)$/
          : undefined;
    const rhs = key?.exec(raw)?.[1];
    if (rhs === undefined) continue;
    for (const m of rhs.matchAll(/["']([^"']+)["']/g))
      if (m[1] !== undefined) out.push({ value: m[1], key: 'env._.source' });
  }
  return out;
}

const SETTINGS: readonly Setting[] = [
  { tool: 'yarn', file: '.yarnrc.yml', read: yarnBerry },
  {
    tool: 'yarn',
    file: '.yarnrc',
    read: (t) =>
      lines(t).flatMap((l) => (l.key === 'yarn-path' ? [{ ...l, key: 'yarn-path' }] : [])),
  },
  { tool: 'npm', file: '.npmrc', read: npmrc },
  { tool: 'rustup', file: 'rust-toolchain.toml', read: rustToolchain },
  { tool: 'rustup', file: 'rust-toolchain', read: rustToolchain },
  ...['.mise.toml', 'mise.toml', '.mise.local.toml', 'mise.local.toml'].map((file) => ({
    tool: 'mise',
    file,
    read: miseSource,
  })),
];

/** The file's text, when it is a regular file of a sane size; opened so a FIFO cannot block. */
function readSmall(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile() || s.size > CONFIG_MAX_BYTES) return undefined;
    const buffer = Buffer.alloc(CONFIG_MAX_BYTES);
    return buffer.subarray(0, readSync(fd, buffer, 0, CONFIG_MAX_BYTES, 0)).toString('utf8');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * The paths inside `root` that a listed configuration names as code its tool runs, relative
 * to `root` and `/`-separated (`.yarn/releases/yarn-4.5.0.cjs`): the configurations at its
 * top and in each directory above it (yarn and npm read those too, a home's among them),
 * each value resolved against the directory of the file that names it. A value that is a
 * bare command (`script-shell=bash`) or leads outside `root` is not the workspace's to hold.
 */
export function namedHeldPaths(root: string): NamedHeldPath[] {
  const top = path.resolve(root);
  const held = new Map<string, string>();
  for (let dir = top; ; dir = path.dirname(dir)) {
    for (const [p, why] of namedIn(dir, top)) if (!held.has(p)) held.set(p, why);
    if (path.dirname(dir) === dir) break;
  }
  return [...held].map(([p, why]) => ({ path: p, why })).sort((a, b) => (a.path < b.path ? -1 : 1));
}

function namedIn(dir: string, root: string): [string, string][] {
  const out: [string, string][] = [];
  for (const s of SETTINGS) {
    const text = readSmall(path.join(dir, s.file));
    if (text === undefined) continue;
    for (const { value, key } of s.read(text)) {
      // A bare word is a command found on PATH; a path has a separator or starts with `.`.
      if (value === '' || (!value.includes('/') && !value.startsWith('.'))) continue;
      const rel = path.relative(root, path.resolve(dir, value));
      if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
      out.push([
        rel === '' ? '' : rel.split(path.sep).join('/'),
        `${s.tool} (${key} in ${dir === root ? s.file : path.join(dir, s.file)})`,
      ]);
    }
  }
  return out;
}
