// The child runs of a run, as a tree for the report (AH-DEL-5): each child the parent's
// chain started or refused, with the slice it ran under and what its end recorded, and
// below it its own children, read from RUN/children/<childId>/ with the same readers as
// the run itself, no deeper than CHILD_DEPTH levels. A child directory is read only when
// it is a real directory (a link in its place is named, never followed) and only under the
// id the parent's chain gave it.
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { eventsOf, readRunEvidence, type RunEvidence } from '../audit/run-evidence.js';
import { RunReader } from '../run-reader.js';
import type { ChildSlice, ChildUsage } from '../schema/events-children.js';
import { RunIdString } from '../schema/common.js';
import { loadPreviews, type Preview } from './previews.js';
import { reportOf } from './sections-run.js';

/** How many levels of children the report reads: a child's children, and theirs, to 4. */
export const CHILD_DEPTH = 4;
/** How much of a child's return the report shows. */
export const RETURN_CHARS = 400;

export interface ChildEnd {
  readonly status: 'completed' | 'failed' | 'cancelled';
  readonly terminalReason: string;
  readonly outcome: 'returned' | 'return_invalid' | 'failed';
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly usage: ChildUsage;
  readonly returnChars: number;
  readonly ms: number;
}

export interface ChildNode {
  readonly callId: string;
  readonly profile: string;
  /** Absent when the parent refused the child before it existed. */
  readonly childId?: string;
  /** Relative to the parent's run directory: `children/<childId>`. */
  readonly rel?: string;
  readonly depth: number;
  readonly slice?: ChildSlice;
  readonly end?: ChildEnd;
  readonly refused?: { readonly code: string; readonly message: string };
  /** The start of what reached the parent (the delegate call's output), or the child's answer. */
  readonly returned?: { readonly text: string; readonly truncated: boolean; readonly from: string };
  /** The child's own run (undefined with `problem` when its directory cannot be read). */
  readonly run?: RunEvidence;
  readonly problem?: string;
  readonly children: readonly ChildNode[];
  /** Children below the depth bound, counted, not read. */
  readonly notShown: number;
}

/** The children of `run` (depth 1), each with its own, to CHILD_DEPTH. */
export async function loadChildTree(
  run: RunEvidence,
  previews: ReadonlyMap<string, Preview>,
  depth = 1,
): Promise<ChildNode[]> {
  const ends = new Map(eventsOf(run, 'child_finished').map((e) => [e.data.callId, e.data]));
  const nodes: ChildNode[] = [];
  for (const r of eventsOf(run, 'child_refused'))
    nodes.push({
      callId: r.data.callId,
      profile: r.data.profile,
      depth,
      refused: { code: r.data.code, message: r.data.message },
      children: [],
      notShown: 0,
    });
  for (const s of eventsOf(run, 'child_started')) {
    const end = ends.get(s.data.callId);
    const base = {
      callId: s.data.callId,
      profile: s.data.profile,
      childId: s.data.childId,
      rel: `children/${s.data.childId}`,
      depth,
      slice: s.data.slice,
      ...(end === undefined ? {} : { end }),
    };
    const opened = await openChild(run, s.data.childId);
    if (!opened.ok) {
      nodes.push({ ...base, problem: opened.problem, children: [], notShown: 0 });
      continue;
    }
    const child = opened.run;
    const childPreviews = await loadPreviews(child);
    const below = depth < CHILD_DEPTH ? await loadChildTree(child, childPreviews, depth + 1) : [];
    const returned = returnOf(run, previews, child, s.data.callId, end);
    nodes.push({
      ...base,
      run: child,
      ...(returned === undefined ? {} : { returned }),
      children: below,
      notShown: depth < CHILD_DEPTH ? 0 : eventsOf(child, 'child_started').length,
    });
  }
  return nodes.sort((a, b) => (a.callId < b.callId ? -1 : a.callId > b.callId ? 1 : 0));
}

async function openChild(
  run: RunEvidence,
  childId: string,
): Promise<{ ok: true; run: RunEvidence } | { ok: false; problem: string }> {
  // The id comes from the parent's chain, already checked by its schema; checked again here
  // because it becomes a path.
  if (!RunIdString.safeParse(childId).success)
    return { ok: false, problem: `${JSON.stringify(childId)} is not a run id; not read` };
  const rel = `children/${childId}`;
  // Each component of the way lstat'ed from the parent's directory: a link is not followed.
  await using parent = await RunReader.open(run.dir);
  for (const way of ['children', rel]) {
    const kind = await parent.entryKind(way);
    if (kind !== 'directory')
      return {
        ok: false,
        problem: `${way}: ${kind === undefined ? 'missing' : `${kind}, not a directory; not followed`}`,
      };
  }
  try {
    await using reader = await RunReader.open(path.join(run.dir, rel));
    return { ok: true, run: await readRunEvidence(reader) };
  } catch (error) {
    return { ok: false, problem: errorMessage(error) };
  }
}

/** The start of what came back: the delegate call's output in the parent, else the answer. */
function returnOf(
  run: RunEvidence,
  previews: ReadonlyMap<string, Preview>,
  child: RunEvidence,
  callId: string,
  end: ChildEnd | undefined,
): ChildNode['returned'] {
  if (end !== undefined && end.outcome !== 'returned') return undefined;
  const executed = eventsOf(run, 'tool_executed').find((e) => e.data.callId === callId);
  for (const rel of executed?.data.outputs ?? []) {
    const p = previews.get(rel);
    if (p !== undefined) return bounded(p.text, p.truncated, rel);
  }
  const answer = reportOf(child)?.finalAnswer;
  return typeof answer === 'string'
    ? bounded(answer, false, "the child's final answer")
    : undefined;
}

function bounded(text: string, truncated: boolean, from: string): ChildNode['returned'] {
  return text.length > RETURN_CHARS || truncated
    ? { text: text.slice(0, RETURN_CHARS), truncated: true, from }
    : { text, truncated: false, from };
}
