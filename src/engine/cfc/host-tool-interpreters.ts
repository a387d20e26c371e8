// How python, node and the POSIX shells find the code they run, from their arguments
// (host-tool-script.ts; AH-CFC-12: one script's state is one, however it is named). Each reads
// its own options (a value-taking option's value is not a script), then its first operand.
import path from 'node:path';
import {
  PLACEHOLDER,
  fileIdentity,
  isDirectoryAt,
  readTextAt,
  type FileIdentity,
  type ScriptOf,
} from './host-tool-files.js';

const STDIN: ScriptOf = { opaque: 'reads its code from stdin' };
/**
 * Code handed over inline: read as the interpreter reads it (host-tool-code.ts). All of the
 * arguments count as its text (the code, and what it is given: `$1`, `sys.argv`).
 */
export const inline = (flag: string, args: readonly string[], shell: boolean): ScriptOf => ({
  opaque: `is handed its code inline ('${flag}')`,
  code: { text: args.filter((a) => !PLACEHOLDER.test(a)).join('\n'), shell },
});
/** The model, not the operator, picks what runs: any tool's code (fail closed). */
const chosen = (arg: string): ScriptOf => ({
  opaque: `runs the script the model names ('${arg}')`,
  unresolved: `the model names the script it runs ('${arg}')`,
});

/** A module as `python -m` finds it: MOD.py or the package MOD/__main__.py, on each base. */
function pythonModule(mod: string, cwd: string, env: Readonly<Record<string, string>>): ScriptOf {
  const rel = mod.split('.').join('/');
  // `-m` puts the cwd first on sys.path, then PYTHONPATH (its relative entries against the cwd).
  const bases = [cwd, ...(env.PYTHONPATH ?? '').split(':').filter((b) => b !== '')];
  for (const base of bases)
    for (const candidate of [`${rel}.py`, `${rel}/__main__.py`]) {
      const file = fileIdentity(path.posix.join(base, candidate), cwd);
      if (file !== undefined) return { file: { ...file, spelled: `-m ${mod}` } };
    }
  // Installed (site-packages, the standard library): its file is the interpreter's to find.
  return { opaque: `runs module '${mod}', which is not in its cwd or PYTHONPATH` };
}

/** `python [options] (-c CODE | -m MOD | - | SCRIPT | DIR | ZIP) [args]`. */
export function pythonScript(
  args: readonly string[],
  cwd: string,
  env: Readonly<Record<string, string>>,
): ScriptOf {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--') return pythonOperand(args[i + 1], cwd);
    if (a === '--check-hash-based-pycs') {
      i++;
      continue;
    }
    if (a.startsWith('--')) continue;
    if (!a.startsWith('-') || a === '-') return pythonOperand(a, cwd);
    for (let j = 1; j < a.length; j++) {
      const c = a[j];
      if (c === 'c') return inline(a, args, false);
      if (c === 'm') return moduleArg(a.slice(j + 1) || args[i + 1], cwd, env);
      if (c === 'W' || c === 'X') {
        if (j === a.length - 1) i++;
        break;
      }
    }
  }
  return STDIN;
}

function moduleArg(
  mod: string | undefined,
  cwd: string,
  env: Readonly<Record<string, string>>,
): ScriptOf {
  if (mod === undefined) return {};
  return PLACEHOLDER.test(mod) ? chosen(mod) : pythonModule(mod, cwd, env);
}

/** A script, or a directory (or zip) whose __main__.py runs. */
function pythonOperand(a: string | undefined, cwd: string): ScriptOf {
  if (a === undefined || a === '-') return STDIN;
  if (PLACEHOLDER.test(a)) return chosen(a);
  if (isDirectoryAt(a, cwd)) {
    const main = fileIdentity(path.posix.join(a, '__main__.py'), cwd);
    return main === undefined ? {} : { file: main };
  }
  const file = fileIdentity(a, cwd);
  return file === undefined ? {} : { file };
}

/** node's options that take their value as the next argument. */
const NODE_VALUED = new Set([
  '-r',
  '--require',
  '--import',
  '--loader',
  '--experimental-loader',
  '-C',
  '--conditions',
  '--input-type',
  '--title',
  '--env-file',
  '--inspect-port',
  '--stack-size',
  '--watch-path',
]);

/** `node [options] (-e CODE | -p CODE | - | SCRIPT | DIR) [args]`. */
export function nodeScript(args: readonly string[], cwd: string): ScriptOf {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--') return nodeOperand(args[i + 1], cwd);
    if (/^(-e|-p|-pe|--eval|--print)(=|$)/.test(a)) return inline(a, args, false);
    if (NODE_VALUED.has(a)) {
      i++;
      continue;
    }
    if (a.startsWith('-') && a !== '-') continue;
    return nodeOperand(a, cwd);
  }
  return STDIN;
}

function nodeOperand(a: string | undefined, cwd: string): ScriptOf {
  if (a === undefined || a === '-') return STDIN;
  if (PLACEHOLDER.test(a)) return chosen(a);
  const file = nodeEntry(a, cwd, 2);
  return file === undefined ? {} : { file: { ...file, spelled: a } };
}

/**
 * The file node runs for its main operand: the file, the file with .js/.mjs/.cjs, or a
 * directory's package.json `main` (resolved the same way) or index.js. `depth` bounds `main`
 * naming a directory naming a directory.
 */
export function nodeEntry(a: string, cwd: string, depth: number): FileIdentity | undefined {
  for (const ext of ['', '.js', '.mjs', '.cjs']) {
    const file = fileIdentity(a + ext, cwd);
    if (file !== undefined) return file;
  }
  if (!isDirectoryAt(a, cwd)) return undefined;
  const main = packageMain(path.posix.join(a, 'package.json'), cwd);
  if (main !== undefined && depth > 0) {
    const found = nodeEntry(path.posix.join(a, main), cwd, depth - 1);
    if (found !== undefined) return found;
  }
  return fileIdentity(path.posix.join(a, 'index.js'), cwd);
}

function packageMain(spelled: string, cwd: string): string | undefined {
  const text = readTextAt(spelled, cwd);
  if (text === undefined) return undefined;
  try {
    const main: unknown = (JSON.parse(text) as { main?: unknown }).main;
    return typeof main === 'string' && main !== '' ? main : undefined;
  } catch {
    return undefined;
  }
}

/** `sh [options] (-c CMD | -s | SCRIPT) [args]`, and bash's long options. */
export function shellScript(args: readonly string[], cwd: string): ScriptOf {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '--' || a === '-') return shellOperand(args[i + 1], cwd);
    if (a === '--rcfile' || a === '--init-file' || a === '-o' || a === '+o' || a === '-O') {
      i++;
      continue;
    }
    if (a.startsWith('--')) continue;
    if (/^[-+][A-Za-z]+$/.test(a)) {
      if (a.startsWith('-') && a.includes('c')) return inline(a, args, true);
      if (a.startsWith('-') && a.includes('s')) return STDIN;
      continue;
    }
    return shellOperand(a, cwd);
  }
  return STDIN;
}

function shellOperand(a: string | undefined, cwd: string): ScriptOf {
  if (a === undefined) return STDIN;
  if (PLACEHOLDER.test(a)) return chosen(a);
  const file = fileIdentity(a, cwd);
  return file === undefined ? {} : { file };
}
