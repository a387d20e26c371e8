// What every `cfh sandbox run` says when it ends: one line on stderr (never on stdout, which
// is the command's bytes or the event stream), naming the run, how it ended and where its
// evidence is; a draft adds the patch waiting and the commands that show and apply it; an
// agent run adds its blocked calls. The printer escapes the line (terminal-text.ts): a
// path or a count is cfh's, but nothing here is trusted to be free of control characters.
import type { PatchReport } from '../engine/run/run-summary.js';
import type { HostObeyedReport } from '../engine/run/rw-sweep.js';
import type { BlockedSummary } from '../engine/agent/blocked-calls.js';
import type { EventListener } from '../evidence/event-log.js';
import type { Printer } from './print.js';

export interface RunEnding {
  readonly runId: string;
  readonly status: string;
  readonly terminalReason: string;
  readonly exitCode: number;
  readonly artifactDir: string;
  readonly patch: PatchReport | null;
  readonly blocked?: BlockedSummary | undefined;
  /** Host-obeyed paths the run created or changed in its host rw mounts (class 9). */
  readonly hostObeyed?: HostObeyedReport | undefined;
}

/** A word the shell takes as it is, else single-quoted (a root with a space in it). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function plural(n: number, one: string, many: string): string {
  return `${String(n)} ${n === 1 ? one : many}`;
}

/**
 * The line. `artifactRoot`: the root given with `--artifact-root`, which the `runs`
 * commands need to find the run again (with none they read the same default cfh wrote to).
 */
export function runEndLine(
  kind: 'command' | 'agent',
  o: RunEnding,
  artifactRoot: string | undefined,
): string {
  const how =
    o.status === 'completed'
      ? `completed (exit ${String(o.exitCode)})`
      : `${o.status} (${o.terminalReason}, exit ${String(o.exitCode)})`;
  const parts = [
    `cfh: ${kind === 'agent' ? 'agent run' : 'run'} ${o.runId} ${how}`,
    `evidence in ${o.artifactDir}`,
  ];
  const root = artifactRoot === undefined ? '' : ` --artifact-root ${shellWord(artifactRoot)}`;
  if (o.patch !== null) {
    const held = o.patch.heldBack.length;
    // Class 9: what an apply holds back unless each path is named, and which.
    const named = o.patch.heldBack.slice(0, 5).join(', ');
    const more = held > 5 ? `, ${String(held - 5)} more` : '';
    const heldText =
      held === 0
        ? ''
        : `, ${String(held)} held back (${named}${more}: paths your tools obey; name each with --host-obeyed PATH)`;
    parts.push(
      o.patch.changes === 0 && held === 0
        ? 'no changes in the draft'
        : `${plural(o.patch.changes, 'change', 'changes')} waiting${heldText}: cfh runs diff ${o.runId}${root}, cfh runs apply ${o.runId}${root}`,
    );
  }
  const obeyed = hostObeyedText(o.hostObeyed, o.runId, root);
  if (obeyed !== undefined) parts.push(obeyed);
  const b = o.blocked;
  if (b !== undefined && b.calls.length > 0) {
    // "2 calls denied, 1 left unapproved"; "1 call left unapproved".
    const denied = b.denied > 0 ? `${plural(b.denied, 'call', 'calls')} denied` : '';
    const unapproved =
      b.unapproved === 0
        ? ''
        : b.denied > 0
          ? `${String(b.unapproved)} left unapproved`
          : `${plural(b.unapproved, 'call', 'calls')} left unapproved`;
    const said = [denied, unapproved].filter((s) => s !== '').join(', ');
    parts.push(`${said} (cfh runs show ${o.runId}${root})`);
  }
  return parts.join('; ');
}

/**
 * Class 9: what the run planted that a host tool obeys, where nothing could hold it
 * read-only (a `.git` where there was none). Said loudly: the next `git status` or `cd`
 * there runs it.
 */
function hostObeyedText(
  h: HostObeyedReport | undefined,
  runId: string,
  root: string,
): string | undefined {
  if (h === undefined || (h.changed === 0 && h.complete)) return undefined;
  const shown = h.paths.slice(0, 5);
  const more = h.changed > shown.length ? `, ${String(h.changed - shown.length)} more` : '';
  const partial = h.complete
    ? ''
    : ' (the end walk did not reach every entry: a bound, or a directory it could not list; there may be more)';
  if (h.changed === 0)
    return `WARNING: the end walk of the rw mounts did not reach every entry (a bound, or a directory it could not list): paths your tools obey may have changed unseen (cfh runs show ${runId}${root})`;
  const what = `${plural(h.changed, 'path', 'paths')} your tools obey (${shown.join(', ')}${more})`;
  return h.mode === 'rw'
    ? `the sandbox created or changed ${what}, as --host-obeyed rw allows${partial}`
    : `WARNING: the sandbox created or changed ${what}: a tool run there on the host obeys them; look before you use git or open the folder there (cfh runs show ${runId}${root})${partial}`;
}

/**
 * `--events jsonl`: every record of the run, as appended to events.jsonl, on stdout as it
 * is appended. A reader that stops reading would make cfh hold the run's events in memory:
 * past EVENT_BUFFER_BYTES unwritten the stream stops, says so on stderr, and what was
 * written is still a prefix of events.jsonl (which has them all).
 */
export function eventStream(printer: Printer): EventListener {
  let stopped = false;
  return (line) => {
    if (stopped) return;
    if (printer.eventLine(line)) return;
    stopped = true;
    printer.err(
      'cfh: --events: stdout stopped draining; no more events are streamed (events.jsonl in the evidence has them all)',
    );
  };
}
