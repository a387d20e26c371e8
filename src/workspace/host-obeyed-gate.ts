// Class 9, the apply side: a draft's change at a host-obeyed path (src/host-obeyed.ts:
// `.git/hooks/x`, `.git/config`, `.envrc`, ...) reaches the host only when the operator
// names it on the apply (`cfh runs apply --host-obeyed PATH`); approving the apply, with
// `--yes`, on a terminal or through an MCP approval rule, is not naming it. Every route
// that writes a draft's changes to the host reads them through this gate: `runs apply`,
// `runs diff --binary` (the patch `git apply` takes), and a session's live `runs_apply`
// (which never takes names: its client is the model side). The gate is computed from each
// change's path every time, never read from the evidence, so a patch recorded by an older
// cfh is held to it too.
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { WorkspaceError } from '../errors.js';
import { hostObeyedPrefix } from '../host-obeyed.js';
import { gitHeldPaths, underHeld, type GitHeldPath } from '../host-obeyed-git.js';
import { gitDirectoriesAbove } from '../host-obeyed-gitdir.js';
import { namedHeldPaths, type NamedHeldPath } from '../host-obeyed-named.js';
import type { PatchChange } from './patch.js';

/**
 * What the host holds beyond the listed names, read from the host workspace when the gate
 * runs: the paths its repository sends git to (host-obeyed-git.ts), the paths a listed
 * configuration names as code to run (host-obeyed-named.ts: a `yarnPath`), and whether an
 * entry exists there (for a git directory the patch completes).
 */
export interface HostHeld {
  readonly git?: readonly GitHeldPath[];
  readonly named?: readonly NamedHeldPath[];
  readonly hostHas?: (rel: string) => boolean;
}

/**
 * The directories git takes for a repository once the patch is applied (host-obeyed-gitdir.ts,
 * the predicate the rw end walk asks too): a patch that makes or completes one, or changes
 * what one holds, plants a `config` or hook git obeys there, whatever the directory is named.
 * An entry is there after the apply when the patch leaves one, else when the host has one.
 */
function gitDirectories(changes: readonly PatchChange[], held: HostHeld): Set<string> {
  const after = new Map(changes.map((c) => [c.path.toLowerCase(), c.after !== null]));
  const has = (rel: string): boolean =>
    after.get(rel.toLowerCase()) ?? held.hostHas?.(rel) ?? false;
  return gitDirectoriesAbove(
    changes.map((c) => c.path),
    has,
  );
}

/** Who obeys `rel`: a listed name, a path the repository names, a git directory. */
function obeyedBy(rel: string, held: HostHeld, gitDirs: ReadonlySet<string>): string | undefined {
  const listed = hostObeyedPrefix(rel);
  if (listed !== undefined) return listed.entry.tool;
  const git = held.git ?? [];
  const at = underHeld(
    rel,
    git.map((g) => g.path),
  );
  if (at !== undefined) return `git (${git.find((g) => g.path === at)?.why ?? 'config'})`;
  const named = held.named ?? [];
  const by = underHeld(
    rel,
    named.map((n) => n.path),
  );
  if (by !== undefined) return named.find((n) => n.path === by)?.why ?? 'a held configuration';
  if (underHeld(rel, [...gitDirs]) !== undefined) return 'git (a repository directory)';
  return undefined;
}

/** A change as an apply sees it: held back when it is at a host-obeyed path not named. */
export type GatedChange = PatchChange & { readonly heldBack?: true };

export interface Gated {
  /** Every change, in order; the held-back ones not applicable, with the reason. */
  readonly changes: readonly GatedChange[];
  /** Paths of the changes held back, in order, each once. */
  readonly heldBack: readonly string[];
  /** For each change at a path a host tool obeys, who obeys it. */
  readonly obeyedBy: ReadonlyMap<string, string>;
}

/** What a held-back change says, where `runs apply` and `runs_diff` list it. */
export function heldNote(c: PatchChange, tool = hostObeyedPrefix(c.path)?.entry.tool): string {
  tool ??= 'a host tool';
  return `held back: a path your tools obey (${tool}); an apply writes it only when it is named (--host-obeyed ${c.path})`;
}

/**
 * The changes with every applicable one at a host-obeyed path held back unless `named`
 * covers it: a name covers the change at that path and every change below it (naming a
 * directory names what is in it), and the directories the patch adds on the way to a
 * covered change (it cannot be written without them). Refuses a name that covers no
 * host-obeyed change (`host_obeyed_not_held`): a typo must not pass for a decision.
 */
export function gateHostObeyed(
  runId: string,
  changes: readonly PatchChange[],
  named: readonly string[] = [],
  host: HostHeld = {},
): Gated {
  const gitDirs = gitDirectories(changes, host);
  const tools = new Map(changes.map((c) => [c.path, obeyedBy(c.path, host, gitDirs)]));
  const obeyed = (c: PatchChange): boolean => c.applicable && tools.get(c.path) !== undefined;
  const covers = (n: string, p: string): boolean => p === n || p.startsWith(`${n}/`);
  for (const n of named) {
    if (!changes.some((c) => obeyed(c) && covers(n, c.path))) {
      const held = [...new Set(changes.filter(obeyed).map((c) => c.path))];
      throw new WorkspaceError(
        'host_obeyed_not_held',
        `run ${runId}: --host-obeyed ${n} names no held-back change of its patch (${held.length === 0 ? 'it holds none back' : `held back: ${held.join(', ')}`}); nothing was applied`,
        { named: n, heldBack: held },
      );
    }
  }
  const coveredPaths = changes
    .filter((c) => obeyed(c) && named.some((n) => covers(n, c.path)))
    .map((c) => c.path);
  const isCovered = (c: PatchChange): boolean =>
    named.some((n) => covers(n, c.path)) ||
    // A directory the patch adds on the way to a covered change.
    (c.after?.type === 'directory' &&
      c.before === null &&
      coveredPaths.some((p) => p.startsWith(`${c.path}/`)));
  const held = new Set(changes.filter((c) => obeyed(c) && !isCovered(c)).map((c) => c.path));
  // A directory the patch removes cannot go while a held-back path inside it stays.
  const holding = (c: PatchChange): string | undefined =>
    c.applicable && c.before?.type === 'directory' && c.after === null
      ? [...held].find((p) => p.startsWith(`${c.path}/`))
      : undefined;
  const heldBack: string[] = [];
  const gated = changes.map((c): GatedChange => {
    const inside = held.has(c.path) ? undefined : holding(c);
    if (!held.has(c.path) && inside === undefined) return c;
    if (heldBack.at(-1) !== c.path) heldBack.push(c.path);
    const note =
      inside === undefined
        ? heldNote(c, tools.get(c.path))
        : `held back: it holds ${inside}, a held-back path your tools obey; naming that path (--host-obeyed ${inside}) lets it go`;
    return { ...c, applicable: false, heldBack: true, note };
  });
  const obeyedByPath = new Map<string, string>();
  for (const [p, tool] of tools) if (tool !== undefined) obeyedByPath.set(p, tool);
  return { changes: gated, heldBack, obeyedBy: obeyedByPath };
}

/** What the host workspace at `root` holds beyond the listed names, read now. */
export async function readHostHeld(root: string, signal: AbortSignal): Promise<HostHeld> {
  const git = await gitHeldPaths(root, signal);
  const hostHas = (rel: string): boolean => {
    try {
      lstatSync(path.join(root, rel));
      return true;
    } catch {
      return false;
    }
  };
  return { git, named: namedHeldPaths(root), hostHas };
}
