// The patch as a reader sees it: a unified diff in git's extended form (`diff --git`,
// `new file mode`, `deleted file mode`, `old mode`/`new mode`, `index`), text changes
// inlined, binary ones listed ("Binary files … differ") and never inlined. Lines starting
// with `#` say what `cfh runs apply` will not apply and why; diff tools skip them.
import { gitMode } from './tree.js';
import { changeOp, type PatchChange, type PatchSide } from './patch.js';
import { gitBinaryLines } from './git-binary.js';
import { unifiedHunks } from './unified-diff.js';

/** Larger than this, a file is listed like a binary one, not inlined. */
export const MAX_TEXT_BYTES = 1024 * 1024;

/**
 * The most text patch.diff inlines in all (both sides of every change), whatever the
 * number of names: past it a change is listed by its digest, like a binary one.
 */
export const MAX_DIFF_BYTES = 64 * 1024 * 1024;

/** One side's contents, or that they are too large to show, or why they are unavailable. */
export type Content = Buffer | { readonly binary: true } | { readonly unavailable: string };

export type ContentReader = (change: PatchChange, side: 'before' | 'after') => Promise<Content>;

export interface RenderedPatch {
  readonly text: string;
  /** The changes with `binary` and `note` filled in from what the contents showed. */
  readonly changes: readonly PatchChange[];
  /** The inline bound, the text inlined, and whether some change was not inlined for it. */
  readonly inline: { readonly maxBytes: number; readonly bytes: number; readonly reached: boolean };
  /** Changes whose contents could not be shown (an unavailable side, the bound): by path. */
  readonly missing: readonly string[];
}

/**
 * What the diff has inlined so far: each content (by digest) once, at most `maxBytes` in
 * all, so hard links to one file, or many files, do not multiply patch.diff or memory.
 */
interface InlineBudget {
  readonly maxBytes: number;
  bytes: number;
  reached: boolean;
  /** Digest of a new content already shown → the path it was shown at. */
  readonly shown: Map<string, string>;
  readonly gitBinary: boolean;
  readonly missing: string[];
}

export function isBinary(data: Buffer): boolean {
  if (data.length > MAX_TEXT_BYTES || data.includes(0)) return true;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(data);
    return false;
  } catch {
    return true;
  }
}

/**
 * `gitBinary` (`runs diff --binary`): a patch `git apply` takes whole. Binary changes are
 * written as git binary patches (git-binary.ts), each content is shown wherever it occurs,
 * and a change `cfh runs apply` does not apply (a symlink, past a bound) is only named in
 * a `#` line, so git does not apply what cfh would not.
 */
export interface RenderOptions {
  readonly gitBinary?: boolean;
}

export async function renderPatch(
  changes: readonly PatchChange[],
  read: ContentReader,
  maxBytes = MAX_DIFF_BYTES,
  options: RenderOptions = {},
): Promise<RenderedPatch> {
  const lines: string[] = [];
  const out: PatchChange[] = [];
  const budget: InlineBudget = {
    maxBytes,
    bytes: 0,
    reached: false,
    shown: new Map(),
    gitBinary: options.gitBinary === true,
    missing: [],
  };
  for (const c of changes) {
    if (budget.gitBinary && !c.applicable) {
      lines.push(
        `# not applied by cfh runs apply, left out: ${quote(c.path)}: ${c.note ?? c.kind}`,
      );
      out.push(c);
      continue;
    }
    const section = await renderChange(c, read, budget);
    lines.push(...section.lines);
    out.push(section.change);
  }
  return {
    text: lines.length === 0 ? '' : `${lines.join('\n')}\n`,
    changes: out,
    inline: { maxBytes, bytes: budget.bytes, reached: budget.reached },
    missing: budget.missing,
  };
}

async function renderChange(
  c: PatchChange,
  read: ContentReader,
  budget: InlineBudget,
): Promise<{ lines: string[]; change: PatchChange }> {
  const a = `a/${c.path}`;
  const b = `b/${c.path}`;
  const head = [`diff --git ${quote(a)} ${quote(b)}`];
  const op = changeOp(c);
  const skipped = c.applicable ? [] : [`# not applied by cfh runs apply: ${c.note ?? c.kind}`];
  if ((op.op === 'add' || op.op === 'delete') && op.type === 'directory') {
    const what = op.op === 'add' ? 'added' : 'removed';
    return { lines: [...skipped, `# directory ${what}: ${quote(c.path)}/`], change: c };
  }
  if (op.op === 'retype' && (op.from === 'directory' || op.to === 'directory')) {
    return {
      lines: [...skipped, `# ${op.from} replaced by ${op.to}: ${quote(c.path)}`],
      change: c,
    };
  }
  head.unshift(...skipped);
  if (c.before === null) head.push(`new file mode ${gitMode(sideType(c.after))}`);
  else if (c.after === null) head.push(`deleted file mode ${gitMode(c.before)}`);
  else if (gitMode(c.before) !== gitMode(c.after)) {
    head.push(`old mode ${gitMode(c.before)}`, `new mode ${gitMode(c.after)}`);
  }
  if (c.kind === 'mode') return { lines: head, change: c };
  // Decided before anything is read: a content shown once, or past the bound, is listed
  // by digest (the blob kept is what apply uses, so the change stays applicable).
  const newSha = c.after?.type === 'file' ? c.after.sha256 : undefined;
  const shownAt = newSha === undefined || budget.gitBinary ? undefined : budget.shown.get(newSha);
  const textSize = (s: PatchSide | null): number =>
    (s?.size ?? 0) > MAX_TEXT_BYTES && !budget.gitBinary ? 0 : (s?.size ?? 0);
  const cost = textSize(c.before) + textSize(c.after);
  if (shownAt !== undefined || budget.bytes + cost > budget.maxBytes) {
    if (shownAt === undefined) budget.reached = true;
    budget.missing.push(c.path);
    const why =
      shownAt === undefined
        ? `text not shown: patch.diff inlines at most ${String(budget.maxBytes)} bytes`
        : `same new contents as ${quote(shownAt)}, shown there`;
    return {
      lines: [...head, `index ${short(c.before)}..${short(c.after)}`, `# ${why}`],
      change: { ...c, note: c.note ?? why },
    };
  }
  const before = c.before === null ? Buffer.alloc(0) : await contentOf(c, c.before, 'before', read);
  const after = c.after === null ? Buffer.alloc(0) : await contentOf(c, c.after, 'after', read);
  const index = `index ${short(c.before)}..${short(c.after)}`;
  const sameMode = c.before !== null && c.after !== null && gitMode(c.before) === gitMode(c.after);
  head.push(sameMode ? `${index} ${gitMode(c.after as PatchSide)}` : index);
  const from = c.before === null ? '/dev/null' : quote(a);
  const to = c.after === null ? '/dev/null' : quote(b);
  // Notes name paths: shown quoted like the headers.
  if (!Buffer.isBuffer(before) && 'unavailable' in before) {
    budget.missing.push(c.path);
    return {
      lines: [...head, `# ${before.unavailable}`],
      change: { ...c, note: before.unavailable },
    };
  }
  if (!Buffer.isBuffer(after) && 'unavailable' in after) {
    budget.missing.push(c.path);
    return {
      lines: [...head, `# ${after.unavailable}`],
      change: { ...c, note: after.unavailable },
    };
  }
  if (
    budget.gitBinary &&
    Buffer.isBuffer(before) &&
    Buffer.isBuffer(after) &&
    (isBinary(before) || isBinary(after))
  ) {
    budget.bytes += before.length + after.length;
    const mode = sameMode && c.after !== null ? gitMode(c.after) : undefined;
    return {
      lines: [
        ...head.slice(0, -1),
        ...gitBinaryLines(c.before === null ? null : before, c.after === null ? null : after, mode),
      ],
      change: { ...c, binary: true },
    };
  }
  if (!Buffer.isBuffer(before) || !Buffer.isBuffer(after) || isBinary(before) || isBinary(after)) {
    return {
      lines: [...head, `Binary files ${from} and ${to} differ`],
      change: { ...c, binary: true },
    };
  }
  const [oldData, newData] = [before, after];
  budget.bytes += oldData.length + newData.length;
  if (newSha !== undefined) budget.shown.set(newSha, c.path);
  const hunks = unifiedHunks(oldData.toString('utf8'), newData.toString('utf8'));
  return {
    lines: [...head, ...(hunks.length === 0 ? [] : [`--- ${from}`, `+++ ${to}`, ...hunks])],
    change: { ...c, binary: false },
  };
}

async function contentOf(
  c: PatchChange,
  side: PatchSide,
  which: 'before' | 'after',
  read: ContentReader,
): Promise<Content> {
  // A symlink's contents, as git shows them, are its target.
  if (side.type === 'symlink') return Buffer.from(side.target ?? '', 'utf8');
  return read(c, which);
}

function sideType(side: PatchSide | null): PatchSide {
  return side ?? { type: 'file', mode: 0o644 };
}

function short(side: PatchSide | null): string {
  if (side === null) return '0000000';
  if (side.type === 'symlink') return 'symlink';
  return (side.sha256 ?? '').slice(0, 12);
}

/**
 * A name as cfh shows it (diff headers, the apply summary): quoted, with every character
 * outside printable ASCII escaped (`\u…`), as git does by default. A name the sandbox chose
 * can then neither hide a line from the approver with terminal escapes nor pass for
 * another with invisible or right-to-left characters.
 */
export function quote(p: string): string {
  if (/^[\x21-\x7e]+(?: [\x21-\x7e]+)*$/.test(p) && !/["\\]/.test(p)) return p;
  return JSON.stringify(p).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
