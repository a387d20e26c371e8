// The run's lifecycle as its events tell it: one terminal state (AH-LIFE-1), limits named
// when they end a run (AH-LIFE-4), everything it started removed (AH-LIFE-3), and retries
// bounded and visible (AH-LIFE-5).
import { SnapshotBudgets } from '../schema/snapshot.js';
import { BudgetExceeded } from '../schema/events-model.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf, unreadable } from './run-evidence.js';

const REASONS: Record<string, RegExp> = {
  completed: /^(exited|exited_nonzero|final_answer)$/,
  failed: /^(limit_reached:[a-z_]+|budget_exceeded:[a-z_]+|error:[a-z0-9_]+)$/,
  cancelled: /^cancelled:(SIGINT|SIGTERM|SIGHUP|abort)$/,
};

/** The exit status terminal.ts gives a reason (undefined: any of the listed). */
function exitFor(reason: string): readonly number[] | 'nonzero' {
  if (reason === 'exited' || reason === 'final_answer') return [0];
  if (reason === 'exited_nonzero') return 'nonzero';
  if (reason === 'limit_reached:wall_time' || reason === 'budget_exceeded:max_wall_time_seconds')
    return [124];
  if (reason === 'limit_reached:memory') return [137];
  if (reason.startsWith('budget_exceeded:')) return [1];
  if (reason === 'cancelled:SIGTERM') return [143];
  if (reason === 'cancelled:SIGHUP') return [129];
  if (reason.startsWith('cancelled:')) return [130];
  return [1, 125];
}

export const terminalCheck: Check = {
  id: 'lifecycle.terminal',
  title: 'created once, then exactly one terminal state with a reason and exit status that fit it',
  clauses: ['AH-LIFE-1'],
  run({ run }) {
    const where: string[] = [];
    const created = eventsOf(run, 'run_created');
    if (created.length !== 1) where.push(`${created.length} run_created events (one expected)`);
    // Before run_created: the evidence files of the set-up and the draft copy of the workspace.
    const firstOther = run.events.find(
      (e) => e.type !== 'artifact_written' && e.type !== 'draft_prepared',
    );
    if (created[0] !== undefined && firstOther !== undefined && firstOther.seq !== created[0].seq)
      where.push(`${at(firstOther)}: comes before run_created`);
    if (unreadable(run, 'run_finished') > 0)
      return inconclusive('a run_finished event is unreadable');
    const finished = eventsOf(run, 'run_finished');
    if (finished.length === 0) {
      if (run.locked) return inconclusive('the run is still being written (its lock is held)');
      where.push(
        'no run_finished: the run never reached a terminal state (its writer died, or the log was cut)',
      );
    }
    if (finished.length > 1)
      where.push(...finished.map((e) => `${at(e)}: one of ${finished.length} terminal records`));
    for (const e of finished) {
      const { status, terminalReason, exitCode } = e.data;
      if (!(REASONS[status]?.test(terminalReason) ?? false))
        where.push(`${at(e)}: reason ${terminalReason} is not one of a ${status} run`);
      const want = exitFor(terminalReason);
      const exited = eventsOf(run, 'container_exited').at(-1)?.data.exitCode;
      const fits =
        want === 'nonzero'
          ? exitCode !== 0 && (exited === undefined || exited === exitCode)
          : want.includes(exitCode);
      if (!fits) where.push(`${at(e)}: exit ${exitCode} does not fit ${terminalReason}`);
    }
    return where.length === 0
      ? pass(
          `one terminal state: ${finished[0]?.data.status ?? ''} (${finished[0]?.data.terminalReason ?? ''})`,
        )
      : fail('the lifecycle is not created → terminal, once', where);
  },
};

export const limitsCheck: Check = {
  id: 'lifecycle.limits',
  title: 'a limit that ends a run is named, and every limit reached is recorded',
  clauses: ['AH-LIFE-4', 'AHGE-LOOP-5'],
  run({ run }) {
    const where: string[] = [];
    const end = eventsOf(run, 'run_finished').at(-1);
    const reason = end?.data.terminalReason ?? '';
    const limits = eventsOf(run, 'limit_reached');
    const budgets = eventsOf(run, 'budget_exceeded');
    const exits = eventsOf(run, 'container_exited');
    if (reason.startsWith('limit_reached:')) {
      const name = reason.slice('limit_reached:'.length);
      if (!limits.some((l) => l.data.limit === name))
        where.push(
          `${end === undefined ? '' : at(end)}: ends on ${name}, but no limit_reached records it`,
        );
    }
    for (const l of limits) {
      if (l.data.limit === 'output_bytes') {
        const stream = l.data.stream;
        if (!exits.some((x) => x.data[stream].truncated))
          where.push(
            `${at(l)}: output_bytes on ${stream}, but container_exited says it was not truncated`,
          );
      } else if (reason !== `limit_reached:${l.data.limit}` && !reason.startsWith('cancelled:')) {
        where.push(`${at(l)}: ${l.data.limit} reached, but the run ends on ${reason}`);
      }
    }
    for (const x of exits)
      for (const stream of ['stdout', 'stderr'] as const)
        if (
          x.data[stream].truncated &&
          !limits.some((l) => l.data.limit === 'output_bytes' && l.data.stream === stream)
        )
          where.push(`${at(x)}: ${stream} truncated without a limit_reached output_bytes event`);
    if (reason.startsWith('budget_exceeded:')) {
      const name = reason.slice('budget_exceeded:'.length);
      if (!budgets.some((b) => b.data.budget === name))
        where.push(
          `${end === undefined ? '' : at(end)}: ends on ${name}, but no budget_exceeded records it`,
        );
      const reported = partOf(run.report.value, 'budget', BudgetExceeded);
      if (!reported.ok || reported.value.budget !== name)
        where.push(`report.json budget: does not name ${name}`);
    }
    for (const b of budgets)
      if (reason !== `budget_exceeded:${b.data.budget}` && !reason.startsWith('cancelled:'))
        where.push(`${at(b)}: ${b.data.budget} exceeded, but the run ends on ${reason}`);
    if (where.length > 0) return fail('limits reached and the terminal reason disagree', where);
    const named = limits.length + budgets.length;
    return pass(named === 0 ? 'no limit reached' : `${named} limit(s) reached, each named`);
  },
};

export const cleanupCheck: Check = {
  id: 'lifecycle.cleanup',
  title: 'every container, tool container and egress network the run started is recorded removed',
  clauses: ['AH-LIFE-3'],
  run({ run }) {
    const where: string[] = [];
    const removed = new Set(eventsOf(run, 'container_removed').map((e) => e.data.containerId));
    const created = eventsOf(run, 'container_created');
    for (const c of created)
      if (!removed.has(c.data.containerId))
        where.push(`${at(c)}: container ${c.data.name} never recorded removed`);
    const toolRemoved = new Set(
      eventsOf(run, 'tool_container_removed').map((e) => e.data.containerId),
    );
    const tools = eventsOf(run, 'tool_container_started');
    for (const t of tools)
      if (!toolRemoved.has(t.data.containerId))
        where.push(`${at(t)}: tool container ${t.data.name} never recorded removed`);
    const closed = new Set(eventsOf(run, 'egress_closed').map((e) => e.data.guardId));
    const ready = eventsOf(run, 'egress_ready');
    for (const r of ready)
      if (!closed.has(r.data.guardId))
        where.push(`${at(r)}: egress network ${r.data.network} never recorded closed`);
    const total = created.length + tools.length + ready.length;
    if (where.length > 0) return fail('something the run started was not recorded removed', where);
    return total === 0
      ? notApplicable('the run started no container')
      : pass(`${total} engine object(s) started, each removed`);
  },
};

export const retriesCheck: Check = {
  id: 'lifecycle.retries',
  title: 'retries bounded by the budgets and each one visible',
  clauses: ['AH-LIFE-5'],
  run({ run }) {
    const starts = eventsOf(run, 'model_call_started');
    const requested = eventsOf(run, 'tool_requested');
    if (starts.length === 0 && requested.length === 0)
      return notApplicable('no model call or tool call: nothing is retried');
    const budgets = partOf(run.snapshot.value, 'budgets', SnapshotBudgets);
    if (!budgets.ok) return inconclusive('snapshot.json budgets cannot be read');
    const where: string[] = [];
    // Model retries happen inside an attempt: between its start and the next event of another kind.
    let current: string | undefined;
    const perAttempt = new Map<string, number>();
    for (const e of run.events) {
      if (e.type === 'model_call_started') current = String(e.data.attemptId);
      else if (e.type === 'model_retry' && current !== undefined)
        perAttempt.set(current, (perAttempt.get(current) ?? 0) + 1);
    }
    for (const [attempt, n] of perAttempt)
      if (n > budgets.value.maxRetriesPerModelCall)
        where.push(
          `${attempt}: ${n} model retries, budget ${budgets.value.maxRetriesPerModelCall}`,
        );
    const retries = new Map<string, number>();
    for (const r of eventsOf(run, 'tool_retry'))
      retries.set(r.data.callId, (retries.get(r.data.callId) ?? 0) + 1);
    for (const x of eventsOf(run, 'tool_executed')) {
      const n = retries.get(x.data.callId) ?? 0;
      if (n > budgets.value.maxRetriesPerToolCall)
        where.push(
          `${at(x)}: ${x.data.callId} retried ${n} times, budget ${budgets.value.maxRetriesPerToolCall}`,
        );
      if ('attempts' in x.data && x.data.attempts !== n + 1)
        where.push(
          `${at(x)}: ${x.data.callId} took ${x.data.attempts} attempts, ${n} retries recorded`,
        );
    }
    const total = [...retries.values(), ...perAttempt.values()].reduce((a, b) => a + b, 0);
    return where.length === 0
      ? pass(`${total} retr${total === 1 ? 'y' : 'ies'}, each recorded and within its budget`)
      : fail('retries not bounded or not visible', where);
  },
};
