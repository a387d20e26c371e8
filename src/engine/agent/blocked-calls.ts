// The calls of an agent run that did not run because they were refused: what the summary
// line, `--json` and `--fail-on-blocked` say. Counted from the run's own event log, as each
// record is appended (EventLog.subscribe), so the count is what the evidence holds, whatever
// path refused the call: a policy rule, a person's "no", a call nobody could approve, a tool
// outside the run's surface (AH-TOOL-2). Invalid arguments are not counted: the model is
// told and may correct them; they never stood between the agent and an action it may take.
import type { EventListener } from '../../evidence/event-log.js';
import { EVENT_SCHEMAS, type EventData } from '../../evidence/schema/registry.js';

/** One refused call; its tool as the model named it: escape it before printing. */
export type BlockedCall = EventData<'run_blocked'>['calls'][number];
/** Denied (policy, a person, outside the surface) and unapproved (nobody gave one). */
export type BlockedSummary = EventData<'run_blocked'>;

function summaryOf(calls: readonly BlockedCall[]): BlockedSummary {
  return {
    denied: calls.filter((c) => c.status === 'denied').length,
    unapproved: calls.filter((c) => c.status === 'approval_required').length,
    calls: [...calls],
  };
}

/** The rule a planning run denies every mutation by: the mode doing what was asked. */
const PLANNING_RULE = 'planning_mode';

export class BlockedCalls {
  readonly #calls: BlockedCall[] = [];

  /** Subscribe this to the run's event log before the first tool call can be decided. */
  readonly listener: EventListener = (_line, record) => {
    if (record.type === 'tool_denied') {
      const d = EVENT_SCHEMAS.tool_denied.safeParse(record.data);
      if (d.success) {
        const { callId, tool, rule, decision, status } = d.data;
        this.#calls.push({ callId, tool, rule, decision, status });
      }
    } else if (record.type === 'tool_rejected') {
      const d = EVENT_SCHEMAS.tool_rejected.safeParse(record.data);
      if (d.success && d.data.reason === 'unknown_tool') {
        const { callId, tool } = d.data;
        this.#calls.push({
          callId,
          tool,
          rule: 'unknown_tool',
          decision: 'deny',
          status: 'denied',
        });
      }
    }
  };

  summary(): BlockedSummary {
    return summaryOf(this.#calls);
  }

  /**
   * What `--fail-on-blocked` fails on: every blocked call, except, in a planning run, the
   * mutations the planning mode itself refuses (they are the mode working as asked).
   */
  failing(mode: 'run' | 'plan'): BlockedSummary {
    if (mode !== 'plan') return this.summary();
    return summaryOf(this.#calls.filter((c) => c.rule !== PLANNING_RULE));
  }
}
