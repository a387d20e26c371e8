// A host tool's path spellings as the tool would resolve them (AH-CFC-2/10, AH-CFC-12): "one
// host tool state, one clearance" (host-tool-sharing.ts) and a store's mount label
// (host-tool-stores.ts) compare the places an entry's arguments and env values name, so
// `~/notes.txt` must be the file under the home directory that a program expanding `~` (most
// CLIs, python's expanduser, a shell) opens, not a directory named `~` in the cwd; likewise
// `~user/…`, `$HOME` and `$NAME`/`${NAME}` of a variable the entry's own env sets. A spelling
// cfh cannot resolve (a variable the tool's environment does not set, an unknown user) may
// name any place: it is returned as unresolved, and the caller fails closed.
import { readFileSync } from 'node:fs';
import os from 'node:os';

/** The environment a host process starts with besides the entry's own (host-process.ts). */
const BASE_ENV: Readonly<Record<string, string>> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
};

export type Expanded = { readonly text: string } | { readonly unresolved: string };

/** cfh's user's home directory, as the passwd database gives it (a tool without HOME reads it). */
function ownHome(): string | undefined {
  try {
    return os.userInfo().homedir;
  } catch {
    return undefined;
  }
}

/** The home directory of `user` in /etc/passwd, if it has one. */
function homeOf(user: string): string | undefined {
  let text: string;
  try {
    text = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    const fields = line.split(':');
    if (fields[0] === user && fields.length >= 7) return fields[5];
  }
  return undefined;
}

const TILDE = /(^|[=:])~([A-Za-z0-9._-]*)(?=\/|$|:)/g;
const VARIABLE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/**
 * `text` with `~`, `~user` (at its start, after an `=` or a `:`) and `$NAME`/`${NAME}`
 * replaced as the tool would see them: `env` is the entry's literal env values; HOME is the
 * entry's HOME, else cfh's user's home. Undefined parts make it unresolved.
 */
export function expandSpelling(text: string, env: Readonly<Record<string, string>>): Expanded {
  const home = env.HOME ?? ownHome();
  let unresolved: string | undefined;
  const tilded = text.replace(TILDE, (whole, before: string, user: string) => {
    const dir = user === '' ? home : homeOf(user);
    if (dir === undefined) unresolved ??= `'~${user}' (no such home directory)`;
    return dir === undefined ? whole : `${before}${dir}`;
  });
  const out = tilded.replace(VARIABLE, (whole, braced?: string, bare?: string) => {
    const name = braced ?? bare ?? '';
    const value = name === 'HOME' ? home : (env[name] ?? BASE_ENV[name]);
    if (value === undefined) unresolved ??= `'${whole}' (its environment does not set ${name})`;
    return value ?? whole;
  });
  return unresolved === undefined ? { text: out } : { unresolved };
}

/** The expanded text, or the text as written when it cannot be resolved (see unresolvedIn). */
export function expandedOr(text: string, env: Readonly<Record<string, string>>): string {
  const e = expandSpelling(text, env);
  return 'text' in e ? e.text : text;
}

/** Why some of `texts` cannot be resolved (each reason once), empty when all can. */
export function unresolvedIn(
  texts: readonly string[],
  env: Readonly<Record<string, string>>,
): string[] {
  const out = new Set<string>();
  for (const t of texts) {
    const e = expandSpelling(t, env);
    if ('unresolved' in e) out.add(e.unresolved);
  }
  return [...out];
}
