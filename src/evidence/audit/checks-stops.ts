// Calls stopped before they ended on their own (AH-LIFE-3, AH-INT-5): a sandbox call that
// timed out or was cancelled while it ran is recorded stopped (tool_call_stopped: its
// session killed, or its container) once nothing of it runs, and only then answered. A
// timed-out call answered without that record, a stop recorded after the answer, or one
// that left something running fails.
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { eventsOf, unreadable, type TypedEvent } from './run-evidence.js';

type Answer = TypedEvent<'tool_executed'> | TypedEvent<'tool_call_aborted'>;

export const callsStoppedCheck: Check = {
  id: 'lifecycle.calls-stopped',
  title: 'a call stopped while it ran is recorded stopped, nothing of it left, before its answer',
  clauses: ['AH-LIFE-3', 'AH-INT-5'],
  run({ run }) {
    if (unreadable(run, 'tool_call_stopped', 'tool_executed', 'tool_call_aborted') > 0)
      return inconclusive('a tool event is unreadable');
    const stops = eventsOf(run, 'tool_call_stopped');
    // Host tools (host:<tool>) are stopped by the host-tool channel, recorded apart.
    const timedOut = eventsOf(run, 'tool_executed').filter(
      (e) => e.data.status === 'timeout' && !e.data.containerId.startsWith('host:'),
    );
    if (stops.length === 0 && timedOut.length === 0)
      return notApplicable('no call in a container was stopped');
    const answers = new Map<string, Answer>();
    for (const e of [...eventsOf(run, 'tool_executed'), ...eventsOf(run, 'tool_call_aborted')])
      if (!answers.has(e.data.callId)) answers.set(e.data.callId, e);
    const where: string[] = [];
    for (const s of stops) {
      const { callId } = s.data;
      const answer = answers.get(callId);
      if (answer === undefined) where.push(`${at(s)}: ${callId} was stopped and never answered`);
      else if (answer.seq < s.seq)
        where.push(`${at(answer)}: ${callId} was answered before its stop was recorded`);
      else if (answer.type === 'tool_executed' && answer.data.containerId !== s.data.containerId)
        where.push(`${at(s)}: ${callId} was stopped in another container than it ran in`);
      if (!s.data.gone)
        where.push(`${at(s)}: ${callId} was answered with processes of it still running`);
    }
    for (const t of timedOut) {
      const stopped = stops.some(
        (s) => s.data.callId === t.data.callId && s.data.reason === 'timeout' && s.seq < t.seq,
      );
      if (!stopped)
        where.push(`${at(t)}: ${t.data.callId} timed out without its stop recorded before`);
    }
    return where.length === 0
      ? pass(`${stops.length} call(s) stopped, each with nothing left before it was answered`)
      : fail('a call was answered while its work may have gone on', where);
  },
};
