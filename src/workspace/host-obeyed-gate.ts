// Class 9, the apply side: a draft's change at a host-obeyed path (src/host-obeyed.ts:
// `.git/hooks/x`, `.git/config`, `.envrc`, ...) reaches the host only when the operator
// names it on the apply (`cfh runs apply --host-obeyed PATH`); approving the apply, with
// `--yes`, on a terminal or through an MCP approval rule, is not naming it. Every route
// that writes a draft's changes to the host reads them through this gate: `runs apply`,
// `runs diff --binary` (the patch `git apply` takes), and a session's live `runs_apply`
// (which never takes names: its client is the model side). The gate is computed from each
// change's path every time, never read from the evidence, so a patch recorded by an older
// cfh is held to it too.
import { WorkspaceError } from '../errors.js';
import { hostObeyedPrefix } from '../host-obeyed.js';
import type { PatchChange } from './patch.js';

/** A change as an apply sees it: held back when it is at a host-obeyed path not named. */
export type GatedChange = PatchChange & { readonly heldBack?: true };

export interface Gated {
  /** Every change, in order; the held-back ones not applicable, with the reason. */
  readonly changes: readonly GatedChange[];
  /** Paths of the changes held back, in order, each once. */
  readonly heldBack: readonly string[];
}

/** What a held-back change says, where `runs apply` and `runs_diff` list it. */
export function heldNote(c: PatchChange): string {
  const tool = hostObeyedPrefix(c.path)?.entry.tool ?? 'a host tool';
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
): Gated {
  const obeyed = (c: PatchChange): boolean =>
    c.applicable && hostObeyedPrefix(c.path) !== undefined;
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
        ? heldNote(c)
        : `held back: it holds ${inside}, a held-back path your tools obey; naming that path (--host-obeyed ${inside}) lets it go`;
    return { ...c, applicable: false, heldBack: true, note };
  });
  return { changes: gated, heldBack };
}
