// Class 9, where git actually looks: the static list (host-obeyed.ts) names `.git`, but a
// repository's own settings send git elsewhere: `core.hooksPath tools/hooks` runs the hooks
// in a tracked directory, a `.git` file (`gitdir: ./.bare`) makes another directory the
// repository, `include.path` reads more configuration from a file anywhere, and a command
// setting (`core.fsmonitor = scripts/watch`) runs a program the workspace holds. Each such
// path inside the workspace is held exactly like a listed name (read-only in an rw mount,
// named on apply).
//
// Read from the host's repository as git reads it: the repository found from the workspace
// upward (the workspace may be a subdirectory of it), its configuration through git itself
// (`git config --list --includes --show-origin`: system, global, the repository's, and
// every file they include, as the operator's git would), with the git directory named
// explicitly so no hook, fsmonitor or ownership check is involved. Listing configuration
// runs nothing the configuration names.
import { execFile, execFileSync } from 'node:child_process';
import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A path git obeys that the workspace holds, relative to it (`''`: the workspace itself). */
export interface GitHeldPath {
  readonly path: string;
  /** The setting or file that makes git obey it. */
  readonly why: string;
}

const GIT_TIMEOUT_MS = 10_000;
const GITFILE_MAX_BYTES = 4096;

/**
 * Settings whose value is a command git (or a tool it starts) runs: the first word, when it
 * is a path, is a program the workspace may hold. Keys are compared lower-cased.
 */
const COMMAND_KEY =
  /^(core\.(fsmonitor|sshcommand|editor|pager|askpass)|credential\.(.+\.)?helper|diff\.external|gpg\.(.+\.)?program|sequence\.editor|alias\..+|uploadpack\.packobjectshook|(filter|diff|merge|mergetool|difftool)\..+\.(clean|smudge|process|textconv|command|driver|cmd|path))$/;
/** Settings whose value is a path to a file or directory git reads and obeys. */
const PATH_KEY = /^(core\.hookspath|core\.attributesfile|include\.path|includeif\..+\.path)$/;

/** The repository git finds from `dir` upward: its git directory and its worktree. */
export function findRepository(dir: string): { gitDir: string; worktree: string } | undefined {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const dotGit = path.join(at, '.git');
    let isDir: boolean | undefined;
    try {
      const s = lstatSync(dotGit);
      isDir = s.isDirectory() ? true : s.isFile() ? false : undefined;
    } catch {
      isDir = undefined;
    }
    if (isDir === true) return { gitDir: dotGit, worktree: at };
    if (isDir === false) {
      const named = gitfileTarget(dotGit);
      if (named !== undefined) return { gitDir: path.resolve(at, named), worktree: at };
    }
    if (path.dirname(at) === at) return undefined;
  }
}

function gitfileTarget(file: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8').slice(0, GITFILE_MAX_BYTES);
    return /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
  } catch {
    return undefined;
  }
}

/** One `git config -z --list --show-origin` record: origin, key, value. */
export interface ConfigEntry {
  readonly origin: string;
  readonly key: string;
  readonly value: string;
}

/** Parses `git config -z --list --show-origin`: `origin\0key\nvalue\0` per entry. */
export function parseConfigList(out: string): ConfigEntry[] {
  const fields = out.split('\0');
  const entries: ConfigEntry[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i] ?? '';
    const kv = fields[i + 1] ?? '';
    const nl = kv.indexOf('\n');
    entries.push({
      origin,
      key: (nl < 0 ? kv : kv.slice(0, nl)).toLowerCase(),
      value: nl < 0 ? '' : kv.slice(nl + 1),
    });
  }
  return entries;
}

/**
 * The absolute paths git obeys, from the repository's configuration: every file it was read
 * from, each path setting, the program each command setting names when it is a path.
 * Relative paths resolve as git resolves them: an include against the file that names it,
 * the rest against the worktree (where hooks and commands run).
 */
export function obeyedByConfig(
  entries: readonly ConfigEntry[],
  worktree: string,
): { readonly abs: string; readonly why: string }[] {
  const home = os.homedir();
  const expand = (p: string, base: string): string =>
    p.startsWith('~/') ? path.join(home, p.slice(2)) : path.resolve(base, p);
  const out: { abs: string; why: string }[] = [];
  for (const e of entries) {
    const file = e.origin.startsWith('file:') ? e.origin.slice(5) : undefined;
    if (file !== undefined)
      out.push({ abs: path.resolve(worktree, file), why: 'a git configuration file' });
    if (PATH_KEY.test(e.key) && e.value !== '') {
      const base =
        e.key.startsWith('include') && file !== undefined
          ? path.dirname(path.resolve(worktree, file))
          : worktree;
      out.push({ abs: expand(e.value, base), why: e.key });
    }
    if (COMMAND_KEY.test(e.key)) {
      const program = /^!?\s*([^\s'"]+)/.exec(e.value)?.[1];
      if (program !== undefined && program.includes('/'))
        out.push({ abs: expand(program, worktree), why: e.key });
    }
  }
  return out;
}

/** The relative path of `abs` inside `root`, lexically or as the kernel resolves it. */
function inside(abs: string, root: string, realRoot: string): string | undefined {
  for (const [p, r] of [
    [abs, root],
    [realOrSelf(abs), realRoot],
  ] as const) {
    const rel = path.relative(r, p);
    if (rel === '') return '';
    if (!rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return undefined;
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

const CONFIG_ARGS = ['config', '-z', '--list', '--includes', '--show-origin'];
const gitArgs = (repo: Repository): string[] => [
  `--git-dir=${repo.gitDir}`,
  `--work-tree=${repo.worktree}`,
  ...CONFIG_ARGS,
];
const EXEC = { timeout: GIT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' } as const;

type Repository = NonNullable<ReturnType<typeof findRepository>>;

/**
 * The paths inside `root` that the host's git obeys because its repository says so, beyond
 * the listed names: the git directory and common directory when not `.git`, the
 * configuration files, `core.hooksPath`, included files, programs command settings name.
 * None when `root` is in no repository, or git is not installed (then nothing runs hooks).
 * A configuration git cannot read (a broken file) still holds the git directory.
 */
export async function gitHeldPaths(root: string, signal: AbortSignal): Promise<GitHeldPath[]> {
  const repo = findRepository(root);
  if (repo === undefined) return [];
  const out = await new Promise<string | null | undefined>((resolve) => {
    execFile('git', gitArgs(repo), { ...EXEC, cwd: repo.worktree, signal }, (error, stdout) => {
      resolve(error === null ? stdout : gitMissing(error) ? null : undefined);
    });
  });
  signal.throwIfAborted();
  return out === null ? [] : heldInside(root, repo, out);
}

/** gitHeldPaths for planning, which is synchronous; bounded by the same timeout. */
export function gitHeldPathsSync(root: string): GitHeldPath[] {
  const repo = findRepository(root);
  if (repo === undefined) return [];
  let out: string | undefined;
  try {
    out = execFileSync('git', gitArgs(repo), {
      ...EXEC,
      cwd: repo.worktree,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch (error) {
    if (gitMissing(error)) return [];
  }
  return heldInside(root, repo, out);
}

function gitMissing(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'ENOENT';
}

function heldInside(root: string, repo: Repository, configOut: string | undefined): GitHeldPath[] {
  const abs: { abs: string; why: string }[] = [{ abs: repo.gitDir, why: 'the git directory' }];
  const common = commonDir(repo.gitDir);
  if (common !== undefined) abs.push({ abs: common, why: 'the git common directory' });
  if (configOut !== undefined)
    abs.push(...obeyedByConfig(parseConfigList(configOut), repo.worktree));
  const realRoot = realOrSelf(root);
  const held = new Map<string, string>();
  for (const a of abs) {
    const rel = inside(a.abs, root, realRoot);
    if (rel !== undefined && !held.has(rel)) held.set(rel, a.why);
  }
  return [...held].map(([p, why]) => ({ path: p, why })).sort((a, b) => (a.path < b.path ? -1 : 1));
}

function commonDir(gitDir: string): string | undefined {
  try {
    const text = readFileSync(path.join(gitDir, 'commondir'), 'utf8').slice(0, GITFILE_MAX_BYTES);
    const first = text.split('\n')[0]?.trim();
    return first === undefined || first === '' ? undefined : path.resolve(gitDir, first);
  } catch {
    return undefined;
  }
}

/** Whether `rel` is `held` or below it (`''` holds everything). */
export function underHeld(rel: string, held: readonly string[]): string | undefined {
  return held.find((h) => h === '' || rel === h || rel.startsWith(`${h}/`));
}
