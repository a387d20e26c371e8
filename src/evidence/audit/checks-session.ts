// The checks of an interactive session's run (`cfh serve --stdio`): its turns are serial and
// each ended (AH-INT-1/2/5), and each turn's direct command is the text its turn_started
// record digests, captured from the caller (AH-INV-3, AH-CFC-4): in the transcript, the
// slot fences open only the messages that start a turn, in turn order. A restored run
// carries the conversation it continues first (session_restored.transcriptMessages); those
// messages were verified against the old run's chain when it was restored.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf, unreadable } from './run-evidence.js';

const digest = (t: string): string => `sha256:${createHash('sha256').update(t).digest('hex')}`;
const FENCE = /^<(direct-command|context|quoted-material)>\n([\s\S]*)\n<\/\1>$/;
const Caller = z.looseObject({ uid: z.number().int().optional() });

/** Whether the run is a session's (its snapshot has `session`). */
export function isSessionRun(snapshot: unknown): boolean {
  return partOf(snapshot, 'session', z.looseObject({ id: z.string() })).ok;
}

export const sessionTurnsCheck: Check = {
  id: 'session.turns',
  title: "a session's turns are serial and ended, each direct command as its turn digests it",
  clauses: ['AH-INT-1', 'AH-INT-2', 'AH-INT-5', 'AH-INV-3', 'AH-CFC-4'],
  run({ run }) {
    if (!isSessionRun(run.snapshot.value)) return notApplicable('not a session');
    if (unreadable(run, 'turn_started', 'turn_completed', 'session_restored') > 0)
      return inconclusive('some session events cannot be read');
    const where: string[] = [];
    const started = eventsOf(run, 'turn_started');
    const completed = eventsOf(run, 'turn_completed');
    // Serial: a turn starts only once the one before it completed; ids increase.
    let open: string | undefined;
    let lastNumber = 0;
    const timeline = [...started, ...completed].sort((a, b) => a.seq - b.seq);
    for (const e of timeline) {
      const n = Number(e.data.turnId.slice('turn-'.length));
      if (e.type === 'turn_started') {
        if (open !== undefined) where.push(`${at(e)}: ${e.data.turnId} starts while ${open} runs`);
        if (n <= lastNumber)
          where.push(`${at(e)}: ${e.data.turnId} does not follow turn ${lastNumber}`);
        open = e.data.turnId;
        lastNumber = n;
      } else if (e.data.turnId !== open) {
        where.push(`${at(e)}: ${e.data.turnId} completes but was not running`);
      } else open = undefined;
    }
    const finished = eventsOf(run, 'run_finished').length > 0;
    if (finished && open !== undefined) where.push(`${open}: never completed before run_finished`);
    // Each capture is of its turn's direct command, by the caller unless vouched.
    const caller = partOf(run.snapshot.value, 'caller', Caller);
    for (const s of started) {
      const c = s.data.capture;
      if (`sha256:${c.sha256}` !== s.data.prompt.digest || c.chars !== s.data.prompt.chars)
        where.push(`${at(s)}: the capture is not of the turn's direct command`);
      if (
        !c.subject.vouched &&
        caller.ok &&
        caller.value.uid !== undefined &&
        c.subject.uid !== caller.value.uid
      )
        where.push(
          `${at(s)}: subject uid ${String(c.subject.uid)}, the caller is uid ${caller.value.uid}`,
        );
    }
    where.push(...transcriptTurns(run.transcript ?? [], started, carriedOver(run)));
    if (where.length > 0) return fail('session turns not as recorded', where);
    return pass(`${started.length} turn(s), serial, each ended, each direct command as digested`);
  },
};

/** How many transcript messages a restored session's run carried over from the one before. */
export function carriedOver(run: Parameters<Check['run']>[0]['run']): number {
  return eventsOf(run, 'session_restored')[0]?.data.transcriptMessages ?? 0;
}

type Started = ReturnType<typeof eventsOf<'turn_started'>>[number];
type Lines = NonNullable<Parameters<Check['run']>[0]['run']['transcript']>;

/** The fenced user messages after the carried-over ones, against the turns in order. */
function transcriptTurns(lines: Lines, started: readonly Started[], skip: number): string[] {
  const where: string[] = [];
  let turn = 0;
  for (const t of lines.slice(skip)) {
    const blocks = t.message?.content ?? [];
    const fenced = blocks.flatMap((b) => {
      const m = b.type === 'text' ? FENCE.exec(b.text) : null;
      return m?.[1] === undefined || m[2] === undefined ? [] : [{ role: m[1], text: m[2] }];
    });
    const opens = fenced.some((f) => f.role === 'direct-command');
    if (!opens) {
      if (blocks.some((b) => b.type === 'text' && b.text.includes('<direct-command>')))
        where.push(
          `transcript.jsonl:${t.line}: a direct-command fence outside a turn's first message`,
        );
      continue;
    }
    const s = started[turn];
    turn += 1;
    if (t.message?.role !== 'user' || s === undefined) {
      where.push(`transcript.jsonl:${t.line}: a direct command no turn_started records`);
      continue;
    }
    const want = {
      'direct-command': [s.data.prompt.digest],
      context: s.data.context.map((c) => c.digest),
      'quoted-material': s.data.quoted.map((q) => q.digest),
    } as Record<string, string[]>;
    for (const role of Object.keys(want)) {
      const got = fenced.filter((f) => f.role === role).map((f) => f.text);
      const digests = want[role] ?? [];
      if (
        got.length !== digests.length ||
        got.some((g, i) => !g.includes('&lt;') && digest(g) !== digests[i])
      )
        where.push(`transcript.jsonl:${t.line}: ${role} is not what ${s.data.turnId} digests`);
    }
  }
  if (turn < started.length)
    where.push(`${started.length - turn} turn(s) without their direct command in the transcript`);
  return where;
}
