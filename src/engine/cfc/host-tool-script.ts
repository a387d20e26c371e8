// The script a host tool entry runs, found the way its interpreter finds it (AH-CFC-2/10,
// AH-CFC-12). "One host tool state, one clearance" (host-tool-sharing.ts) knows a tool by its
// script, so every spelling an interpreter accepts for one file must come to that file:
// `python3 -m notes_server` (notes_server.py, or notes_server/__main__.py, against the cwd
// and PYTHONPATH), `python3 notes` (notes/__main__.py), `node dir` (its package.json main or
// index.js). Code cfh cannot resolve to a file (inline: `sh -c`, `python3 -c`, `node -e`,
// `perl -e`; stdin; a module found only on the interpreter's own path; a wrapper such as
// `env`, `npx` or `uv run` naming no file) is `opaque`: host-tool-code.ts reads it (inline
// code, a wrapper's words) as its interpreter would, and a script the model names is
// `unresolved`, which host-tool-sharing.ts takes for any other entry's code (fail closed).
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { PLACEHOLDER, fileIdentity, type FileIdentity, type ScriptOf } from './host-tool-files.js';
import { inline, nodeScript, pythonScript, shellScript } from './host-tool-interpreters.js';

export type { FileIdentity, ScriptOf };

/** Programs that run a command their arguments name, which cfh does not follow. */
const WRAPPERS = new Set([
  'env',
  'npx',
  'npm',
  'pnpm',
  'yarn',
  'bun',
  'bunx',
  'deno',
  'uv',
  'uvx',
  'pipx',
  'poetry',
  'pipenv',
  'sudo',
  'doas',
  'nice',
  'nohup',
  'timeout',
  'stdbuf',
  'setsid',
  'xargs',
  'time',
  'nix',
  'direnv',
  'flock',
  'ionice',
  'taskset',
  'chroot',
  'runuser',
  'su',
  'busybox',
  'tsx',
]);
/** Other interpreters, by the short option (alone or in a cluster) that hands them code inline. */
const INLINE_FLAGS: Readonly<Record<string, RegExp>> = {
  perl: /^-[A-Za-z]*[eE]/,
  ruby: /^-[A-Za-z]*e/,
  php: /^-r$/,
  lua: /^-e$/,
  Rscript: /^-e$/,
  osascript: /^-e$/,
};

/** The first argument that names an existing regular file: a script, for most programs. */
function firstFile(args: readonly string[], cwd: string): FileIdentity | undefined {
  for (const arg of args) {
    // A {field} is the model's, chosen per call: never the tool's code.
    if (PLACEHOLDER.test(arg)) continue;
    const file = fileIdentity(arg, cwd);
    if (file !== undefined) return file;
  }
  return undefined;
}

function family(names: readonly string[]): string | undefined {
  for (const n of names) {
    if (/^(python|pypy)[0-9.]*$/.test(n)) return 'python';
    if (/^(node|nodejs)$/.test(n)) return 'node';
    if (/^(sh|bash|dash|zsh|ksh|mksh|ash)$/.test(n)) return 'shell';
  }
  return undefined;
}

/**
 * What `args` hand the program `spelled` (found at `found`) to run, in `cwd` with `env`.
 * Both names count (`python3` on PATH is `python3.12` on disk; a link may be named anything).
 */
export function scriptOf(
  spelled: string,
  found: string | undefined,
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>>,
): ScriptOf {
  const names = [path.basename(spelled)];
  if (found !== undefined) names.push(path.basename(found), path.basename(realOr(found)));
  const kind = family(names);
  if (kind === 'python') return pythonScript(args, cwd, env);
  if (kind === 'node') return nodeScript(args, cwd);
  if (kind === 'shell') return shellScript(args, cwd);
  const file = firstFile(args, cwd);
  const inlineFlag = names.map((n) => INLINE_FLAGS[n]).find((f) => f !== undefined);
  if (inlineFlag !== undefined) {
    const flag = args.find((a) => inlineFlag.test(a));
    if (flag !== undefined) return inline(flag, args, false);
    return file !== undefined ? { file } : { opaque: 'reads its code from stdin' };
  }
  if (file !== undefined) return { file };
  const wrapper = names.find((n) => WRAPPERS.has(n));
  return wrapper === undefined
    ? {}
    : { opaque: `runs a command its arguments name, which cfh does not follow ('${wrapper}')` };
}

/**
 * Whether the program `spelled` (found at `found`) is an interpreter whose script file cfh
 * reads in full (host-tool-code.ts): 'shell' for a POSIX shell, 'other' for python, node and
 * the interpreters of INLINE_FLAGS; undefined for any other program.
 */
export function interpreterOf(
  spelled: string,
  found: string | undefined,
): 'shell' | 'other' | undefined {
  const names = [path.basename(spelled)];
  if (found !== undefined) names.push(path.basename(found), path.basename(realOr(found)));
  const kind = family(names);
  if (kind === 'shell') return 'shell';
  if (kind !== undefined || names.some((n) => INLINE_FLAGS[n] !== undefined)) return 'other';
  return undefined;
}

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
