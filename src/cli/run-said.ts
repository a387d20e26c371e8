// What every `cfh sandbox run` says when it ends: one line on stderr (never on stdout, which
// is the command's bytes or the event stream), naming the run, how it ended and where its
// evidence is; a draft adds the patch waiting and the commands that show and apply it; an
// agent run adds its blocked calls. The printer escapes the line (terminal-text.ts): a
// path or a count is cfh's, but nothing here is trusted to be free of control characters.
import type { PatchReport } from '../engine/run-summary.js';
import type { BlockedSummary } from '../engine/blocked-calls.js';
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
}

/** A word the shell takes as it is, else single-quoted (a root with a space in it). */
function shellWord(word: string): string {
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
    parts.push(
      o.patch.changes === 0
        ? 'no changes in the draft'
        : `${plural(o.patch.changes, 'change', 'changes')} waiting: cfh runs diff ${o.runId}${root}, cfh runs apply ${o.runId}${root}`,
    );
  }
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
