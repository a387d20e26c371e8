// Where the evidence lives and how the run failed: artifact paths confined beneath the run
// directory and outside every mount (AH-ART-3, AH-CONT-5), failures typed with their
// boundary (AH-TOOL-6, AH-DIAG-1), and every egress attempt a complete decision that fits
// the posture (AH-CONT-4).
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { FAILING_BOUNDARIES } from '../../errors.js';
import { ALLOWING_REASONS } from '../schema/events-network.js';
import { SnapshotMount, SnapshotNetwork } from '../schema/snapshot.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf } from './run-evidence.js';
import { hasEgress } from '../../config/postures.js';

/** A path relative to the run directory that cannot leave it. */
export function isConfinedRef(ref: string): boolean {
  if (ref === '' || ref.startsWith('/') || ref.includes('\\') || ref.includes('\0')) return false;
  return ref.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

export const confinedCheck: Check = {
  id: 'artifacts.confined',
  title: 'every artifact path stays beneath the run directory, which no mount exposes',
  clauses: ['AH-ART-3', 'AH-CONT-5'],
  run({ run }) {
    const where: string[] = [];
    for (const a of eventsOf(run, 'artifact_written'))
      if (!isConfinedRef(a.data.file))
        where.push(`${at(a)}: ${JSON.stringify(a.data.file)} leaves the run directory`);
    for (const x of eventsOf(run, 'tool_executed'))
      for (const ref of x.data.outputs)
        if (!isConfinedRef(ref) || !ref.startsWith('outputs/'))
          where.push(`${at(x)}: output ${JSON.stringify(ref)} is not under outputs/`);
    for (const f of run.files)
      if (f.kind !== 'file') where.push(f.problem ?? `${f.rel}: not a regular file`);
    const spec = partOf(
      run.snapshot.value,
      'containerSpec',
      z.looseObject({ mounts: z.array(SnapshotMount) }),
    );
    if (spec.ok) {
      let real: string;
      try {
        real = realpathSync(run.dir);
      } catch {
        real = path.resolve(run.dir);
      }
      for (const m of spec.value.mounts) {
        const rel = path.relative(m.source, real);
        if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel)))
          where.push(
            `snapshot.json containerSpec.mounts: ${m.source} (${m.mode}) exposes the run directory to the sandbox`,
          );
      }
    }
    return where.length === 0
      ? pass(`${run.files.length} regular files, every path confined, no mount exposes them`)
      : fail('artifacts outside their boundary', where);
  },
};

const ErrorPart = z
  .strictObject({ code: z.string(), boundary: z.string(), message: z.string() })
  .nullable();
// The errors' own list (AH-DIAG-1): a boundary cfh can report is one the audit accepts.
const BOUNDARIES: ReadonlySet<string> = new Set(FAILING_BOUNDARIES);

export const failuresClassifiedCheck: Check = {
  id: 'failures.classified',
  title: 'a failed run names its error and the failing boundary; harness faults fail the run',
  clauses: ['AH-TOOL-6', 'AH-DIAG-1'],
  run({ run }) {
    const end = eventsOf(run, 'run_finished').at(-1);
    if (end === undefined) return inconclusive('the run is not finished');
    const error = partOf(run.report.value, 'error', ErrorPart);
    if (!error.ok) return fail('report.json error: missing or unreadable', ['report.json error']);
    const where: string[] = [];
    const reason = end.data.terminalReason;
    if (reason.startsWith('error:')) {
      const code = reason.slice('error:'.length);
      if (error.value === null) where.push(`report.json error: null, the run ended on ${reason}`);
      else {
        if (error.value.code !== code)
          where.push(`report.json error.code: ${error.value.code}, the run ended on ${reason}`);
        if (!BOUNDARIES.has(error.value.boundary))
          where.push(`report.json error.boundary: '${error.value.boundary}' names no boundary`);
      }
    } else if (end.data.status === 'completed' && error.value !== null)
      where.push(`report.json error: ${error.value.code}, yet the run completed`);
    for (const x of eventsOf(run, 'tool_executed'))
      if (x.data.status === 'withheld' && reason !== 'error:tool_output_invalid')
        where.push(`${at(x)}: an observation was withheld, yet the run ended on ${reason}`);
    for (const c of eventsOf(run, 'containment_failure'))
      if (reason !== `error:${c.data.code}`)
        where.push(`${at(c)}: containment failed (${c.data.code}), yet the run ended on ${reason}`);
    return where.length === 0
      ? pass(
          reason.startsWith('error:')
            ? `failed at the ${error.value?.boundary ?? ''} boundary (${reason})`
            : 'no failure to classify',
        )
      : fail('a failure without its class', where);
  },
};

export const egressCheck: Check = {
  id: 'egress.decided',
  title: 'the network posture as recorded, and every egress attempt a decision that fits it',
  clauses: ['AH-CONT-4'],
  run({ run }) {
    const net = partOf(run.snapshot.value, 'network', SnapshotNetwork);
    if (!net.ok) return inconclusive('snapshot.json network cannot be read');
    const egress = eventsOf(run, 'egress');
    const ready = eventsOf(run, 'egress_ready');
    const { mode, allow, deny } = net.value;
    const where: string[] = [];
    if (!hasEgress(mode)) {
      for (const e of [...egress, ...ready])
        where.push(`${at(e)}: network disabled, yet ${e.type} was recorded`);
      return where.length === 0
        ? notApplicable('network disabled: no interface, no egress')
        : fail('egress in a disabled posture', where);
    }
    const gate = ready[0];
    const firstWork = run.events.find(
      (e) => e.type === 'container_started' || e.type === 'tool_container_started',
    );
    // A run that ended short of its posture (cancelled while it was opened, or failed opening
    // it) owes no egress_ready: nothing of it started, nothing reached the network.
    const end = eventsOf(run, 'run_finished').at(-1);
    if (
      ready.length === 0 &&
      firstWork === undefined &&
      egress.length === 0 &&
      end !== undefined &&
      end.data.status !== 'completed'
    )
      return notApplicable(
        `the run ended (${end.data.terminalReason}) before its ${mode} posture was ready; nothing started`,
      );
    if (ready.length !== 1 || gate === undefined)
      where.push(`${ready.length} egress_ready events (one expected for ${mode})`);
    else if (gate.data.mode !== mode)
      where.push(`${at(gate)}: gateway set up for ${gate.data.mode}, the snapshot says ${mode}`);
    const readyAt = ready[0]?.seq ?? Number.POSITIVE_INFINITY;
    if (firstWork !== undefined && firstWork.seq < readyAt)
      where.push(`${at(firstWork)}: the workload started before the egress posture was ready`);
    for (const e of egress) {
      const d = e.data;
      const allowing = ALLOWING_REASONS.includes(d.reason);
      if (d.allowed !== allowing)
        where.push(`${at(e)}: allowed ${String(d.allowed)} with reason ${d.reason}`);
      if (d.reason === 'open' && mode !== 'open')
        where.push(`${at(e)}: allowed as open in ${mode} mode`);
      if (d.reason === 'allowlisted' && (d.rule === undefined || !allow.includes(d.rule)))
        where.push(
          `${at(e)}: allowlisted by ${JSON.stringify(d.rule)}, which is not an allow entry`,
        );
      if (d.reason === 'denylisted' && (d.rule === undefined || !deny.includes(d.rule)))
        where.push(`${at(e)}: denylisted by ${JSON.stringify(d.rule)}, which is not a deny entry`);
      if (e.seq < readyAt) where.push(`${at(e)}: before the gateway was ready`);
    }
    const allowed = egress.filter((e) => e.data.allowed).length;
    return where.length === 0
      ? pass(
          `${mode}: ${egress.length} attempt(s) decided, ${allowed} allowed, ${egress.length - allowed} refused`,
        )
      : fail('egress decisions missing or contradicting the posture', where);
  },
};

export const approvalsCheck: Check = {
  id: 'approvals.paired',
  title: 'every approval asked is answered once, and a call that asked runs only once granted',
  clauses: ['AHGE-APPROVAL-1'],
  run({ run }) {
    const requested = eventsOf(run, 'approval_requested');
    const received = eventsOf(run, 'approval_received');
    if (requested.length === 0 && received.length === 0)
      return notApplicable('no approval was asked for');
    const where: string[] = [];
    for (const r of requested) {
      const answers = received.filter((a) => a.data.callId === r.data.callId && a.seq > r.seq);
      if (answers.length !== 1)
        where.push(
          `${at(r)}: ${answers.length} answers to the approval asked for ${r.data.callId}`,
        );
      for (const a of answers)
        if (a.data.argsDigest !== r.data.argsDigest)
          where.push(
            `${at(a)}: answers other arguments than the ones ${r.data.callId} asked about`,
          );
    }
    for (const a of received)
      if (!requested.some((r) => r.data.callId === a.data.callId && r.seq < a.seq))
        where.push(`${at(a)}: an approval nobody asked for (${a.data.callId})`);
    for (const x of eventsOf(run, 'tool_executed')) {
      const asked = requested.find((r) => r.data.callId === x.data.callId);
      if (asked === undefined) continue;
      const granted = received.some(
        (a) => a.data.callId === x.data.callId && a.data.outcome === 'granted' && a.seq < x.seq,
      );
      if (!granted)
        where.push(`${at(x)}: ${x.data.callId} ran, but its approval was not granted first`);
    }
    return where.length === 0
      ? pass(`${requested.length} approval(s) asked, each answered once; only granted calls ran`)
      : fail('approvals not paired', where);
  },
};
