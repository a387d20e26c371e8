// Integrity first (AH-ART-1, AH-LIFE-2): the chain from the first event, the terminal
// anchor, every recorded digest, files no record accounts for, the operator's signature,
// and the shape of every document against the published schema. Any break is a fail that
// names the line, the file or the field.
import { CHILDREN_DIR } from '../schema/events-children.js';
import { z } from 'zod';
import { hashEvent, GENESIS_HASH } from '../event-log.js';
import { reportDigest, RUN_FILES } from '../run-directory.js';
import { isRunId } from '../run-id.js';
import { AFTER_TERMINAL } from '../schema/events-draft.js';
import { Report } from '../schema/report.js';
import { issueText } from '../schema/registry.js';
import { RunSignature } from '../schema/signature.js';
import { RunState } from '../schema/state.js';
import { shownFingerprint, verifyRunSignature, type TrustedKey } from '../signing.js';
import {
  at,
  fail,
  inconclusive,
  notApplicable,
  pass,
  warn,
  type Check,
  type Outcome,
} from './check.js';
import { recordOf } from './parts.js';
import { eventsOf, type RunEvidence } from './run-evidence.js';

/** Files of a run directory no artifact record covers, by design: each is checked otherwise. */
const ANCHORED_FILES = new Set<string>([
  RUN_FILES.events,
  RUN_FILES.state,
  RUN_FILES.report,
  RUN_FILES.signature,
]);
export { CHILDREN_DIR } from '../schema/events-children.js';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const Anchor = z.object({ seq: z.number(), hash: z.string() });

export const chainCheck: Check = {
  id: 'integrity.chain',
  title: 'hash chain from the first event',
  clauses: ['AH-ART-1'],
  run({ run }) {
    // No log at all: its writer stopped before it began one (`cfh audit` says so with exit
    // 2 before any check; `runs show` says `events none`). Nothing to verify, not a break.
    if (!run.eventLog.present) return inconclusive('no events.jsonl: nothing to chain');
    if (run.eventLog.problem !== undefined)
      return fail('events.jsonl cannot be read', [run.eventLog.problem]);
    const where: string[] = run.badLines.map((b) => `events.jsonl:${b.line}: ${b.problem}`);
    let prev = GENESIS_HASH;
    let expected = 1;
    for (const e of run.events) {
      const { hash, ...rest } = e.record;
      if (e.seq !== expected) where.push(`${at(e)}: seq ${e.seq} where ${expected} was due`);
      if (rest.prevHash !== prev)
        where.push(`${at(e)}: prevHash is not the hash of the line before`);
      if (typeof hash !== 'string' || hashEvent(rest as Parameters<typeof hashEvent>[0]) !== hash)
        where.push(`${at(e)}: hash does not match the line (edited)`);
      if (rest.runId !== run.runId) where.push(`${at(e)}: names run ${String(rest.runId)}`);
      prev = typeof hash === 'string' ? hash : '';
      expected = (Number.isInteger(e.seq) ? e.seq : expected) + 1;
    }
    if (run.events.length === 0 && run.badLines.length === 0)
      return fail('events.jsonl is empty', ['events.jsonl']);
    return where.length === 0
      ? pass(`${run.events.length} events chained from the first`)
      : fail('the hash chain is broken', where);
  },
};

export const anchorCheck: Check = {
  id: 'integrity.anchor',
  title: 'terminal anchor: state.json and report.json cite the last event, run_finished',
  clauses: ['AH-LIFE-2', 'AH-ART-1'],
  run({ run }) {
    const where: string[] = [];
    const finished = eventsOf(run, 'run_finished');
    const state = recordOf(run.state.value);
    const stateName = typeof state?.state === 'string' ? state.state : undefined;
    const end = finished.at(-1);
    if (end === undefined) {
      if (stateName !== undefined && TERMINAL.has(stateName))
        where.push(`state.json says ${stateName} but the log has no run_finished (cut short)`);
      if (run.report.present) where.push('report.json: exists, but the log has no run_finished');
      const anchor = Anchor.safeParse(state?.lastEvent);
      if (anchor.success) {
        const cited = run.events.find((e) => e.seq === anchor.data.seq);
        if (cited === undefined || cited.record.hash !== anchor.data.hash)
          where.push(`state.json: cites event ${anchor.data.seq}, which the log does not hold`);
      }
      return where.length === 0
        ? pass(`run not finished; state.json cites an event of the log`)
        : fail('the log and its anchors disagree', where);
    }
    // Only an `applied` (draft commit, `cfh runs apply`) may follow the terminal record,
    // once; none may come before it (governance extension, "Draft vs commit policy").
    for (const e of run.events)
      if (e.seq > end.seq && !AFTER_TERMINAL.includes(e.type))
        where.push(`events follow run_finished (seq ${end.seq}): the log was extended (${at(e)})`);
    const applied = run.events.filter((e) => AFTER_TERMINAL.includes(e.type));
    for (const e of applied.filter((a) => a.seq < end.seq))
      where.push(`${at(e)}: ${e.type} before run_finished (seq ${end.seq})`);
    if (applied.length > 1)
      where.push(`${applied.length} applied events (a patch is applied once)`);
    const endHash = run.events.find((e) => e.seq === end.seq)?.record.hash;
    for (const [name, doc] of [
      [RUN_FILES.state, run.state],
      [RUN_FILES.report, run.report],
    ] as const) {
      const value = recordOf(doc.value);
      if (!doc.present || value === undefined) {
        where.push(doc.present ? (doc.problem ?? `${name}: not JSON`) : `${name}: missing`);
        continue;
      }
      const anchor = Anchor.safeParse(value.lastEvent);
      if (!anchor.success || anchor.data.seq !== end.seq || anchor.data.hash !== endHash)
        where.push(`${name}: lastEvent does not cite run_finished (seq ${end.seq})`);
      const status = name === RUN_FILES.state ? value.state : value.status;
      if (
        status !== end.data.status ||
        value.terminalReason !== end.data.terminalReason ||
        value.exitCode !== end.data.exitCode
      )
        where.push(
          `${name}: says ${String(status)} (${String(value.terminalReason)}, exit ${String(value.exitCode)}); run_finished says ${end.data.status} (${end.data.terminalReason}, exit ${end.data.exitCode})`,
        );
    }
    const report = recordOf(run.report.value);
    if (report !== undefined) {
      if (end.data.reportSha256 === undefined)
        where.push(`${at(end)}: run_finished binds no report digest`);
      else if (reportDigest(report) !== end.data.reportSha256)
        where.push('report.json: its digest differs from the one run_finished recorded (edited)');
    }
    const commit = applied[0];
    return where.length === 0
      ? pass(
          commit === undefined
            ? `state.json and report.json anchored to run_finished (seq ${end.seq}), the last event`
            : `state.json and report.json anchored to run_finished (seq ${end.seq}); patch applied to the host after the run (seq ${commit.seq}), the last event`,
        )
      : fail('the terminal anchor does not hold', where);
  },
};

interface Recorded {
  readonly sha256: string;
  readonly bytes: number | undefined;
  readonly where: string;
}

/** The files the chain records, by path; a second record of one file is itself a problem. */
export function recordedFiles(run: RunEvidence): {
  files: Map<string, Recorded>;
  twice: string[];
} {
  const files = new Map<string, Recorded>();
  const twice: string[] = [];
  for (const e of eventsOf(run, 'artifact_written')) {
    if (files.has(e.data.file)) twice.push(`${at(e)}: ${e.data.file} recorded a second time`);
    files.set(e.data.file, { sha256: e.data.sha256, bytes: e.data.bytes, where: at(e) });
  }
  return { files, twice };
}

export const digestsCheck: Check = {
  id: 'integrity.digests',
  title: 'every evidence file matches the digest the chain recorded',
  clauses: ['AH-ART-1'],
  run({ run }) {
    // No log: the writer stopped before it began one; no record says what must be there.
    if (!run.eventLog.present) return notApplicable('no events.jsonl: no record of any file');
    const { files, twice } = recordedFiles(run);
    const where = [...twice];
    const onDisk = new Map(run.files.map((f) => [f.rel, f]));
    for (const [file, want] of files) {
      const got = onDisk.get(file);
      if (got?.problem !== undefined) where.push(`${got.problem} (recorded ${want.where})`);
      else if (got?.sha256 === undefined) where.push(`${file}: recorded (${want.where}), missing`);
      else if (got.sha256 !== want.sha256) where.push(`${file}: digest differs from ${want.where}`);
      else if (want.bytes !== undefined && got.bytes !== want.bytes)
        where.push(`${file}: ${got.bytes} bytes, ${want.bytes} recorded`);
    }
    // What must have been recorded: the snapshot and filter always; a finished run's
    // transcript and streamed outputs; every output a tool call cites.
    const finished = eventsOf(run, 'run_finished').length > 0;
    const required: string[] = [RUN_FILES.snapshot, RUN_FILES.seccomp];
    if (finished && onDisk.has(RUN_FILES.transcript)) required.push(RUN_FILES.transcript);
    if (finished && eventsOf(run, 'container_exited').length > 0)
      required.push('outputs/stdout', 'outputs/stderr');
    for (const e of eventsOf(run, 'tool_executed'))
      for (const ref of e.data.outputs)
        if (!files.has(ref)) where.push(`${at(e)}: cites ${ref}, which no record covers`);
    for (const file of required)
      if (!files.has(file)) where.push(`${file}: no artifact_written record in the log`);
    return where.length === 0
      ? pass(`${files.size} file(s) match their recorded digests`)
      : fail('evidence files do not match the chain', where);
  },
};

export const unaccountedCheck: Check = {
  id: 'integrity.unaccounted',
  title: 'no file in the run directory that no record accounts for',
  clauses: ['AH-ART-1'],
  run({ run }) {
    const { files } = recordedFiles(run);
    // A child run's directory is accounted for by the child_started that names it (its own
    // chain accounts for what is in it: children.tree); a directory no record names is not.
    const childDirs = eventsOf(run, 'child_started')
      .filter((e) => isRunId(e.data.childId))
      .map((e) => `${CHILDREN_DIR}/${e.data.childId}/`);
    const inChildDir = (rel: string): boolean => childDirs.some((d) => rel.startsWith(d));
    const where = [
      ...run.listProblems,
      ...run.files
        .filter((f) => !ANCHORED_FILES.has(f.rel) && !files.has(f.rel) && !inChildDir(f.rel))
        .map((f) => `${f.rel}: in the directory, but no record accounts for it`),
    ];
    return where.length === 0
      ? pass(`${run.files.length} entries, each recorded or anchored`)
      : fail('files nobody recorded', where);
  },
};

export const signatureCheck: Check = {
  id: 'integrity.signature',
  title: "the terminal record carries the operator's signature",
  clauses: ['CFH-EVID-2'],
  run({ run, trustedKey, requireSignature }) {
    const end = eventsOf(run, 'run_finished').at(-1);
    if (!run.signature.present) {
      if (requireSignature === true)
        return fail('unsigned, and --require-signature makes every unsigned run fail', [
          'signature.json: missing',
        ]);
      if (trustedKey !== undefined) return unsignedWithKey(run, trustedKey);
      if (end === undefined) return notApplicable('run not finished; nothing to sign yet');
      return warn(
        'unsigned: no operator key was configured when it ran; a log rewritten whole and re-anchored cannot be told from the real one',
      );
    }
    if (trustedKey === undefined)
      return requireSignature === true
        ? fail('signature.json is present, but no trusted public key is configured to check it', [
            'signature.json',
          ])
        : warn('signature.json is present, but no trusted public key is configured to check it');
    const checked = verifyRunSignature(run.signature.value, trustedKey);
    if (!checked.ok) return fail(checked.problem, ['signature.json']);
    const signed = checked.signature.signed;
    const where: string[] = [];
    if (signed.runId !== run.runId) where.push(`signature.json: signs run ${signed.runId}`);
    const endHash =
      end === undefined ? undefined : run.events.find((e) => e.seq === end.seq)?.record.hash;
    if (end === undefined || signed.event.seq !== end.seq || signed.event.hash !== endHash)
      where.push(
        `signature.json: signs event ${signed.event.seq} (${signed.event.hash.slice(0, 12)}…), not this log's run_finished`,
      );
    const report = recordOf(run.report.value);
    if (report === undefined || reportDigest(report) !== signed.reportSha256)
      where.push('signature.json: signs another report.json');
    return where.length === 0
      ? pass(`signed by the trusted key ${checked.signature.keyFingerprint.slice(0, 16)}…`)
      : fail('the signature does not cover this evidence', where);
  },
};

/**
 * When a run started, by each record of it: its id's stamp (the directory name, and every
 * event's runId), snapshot.json's createdAt, run_created's time. NaN: missing or unreadable.
 * The id holds whole seconds: it is read as the last moment of its second, the latest the
 * run could have started.
 */
function startRecords(run: RunEvidence): { readonly what: string; readonly ms: number }[] {
  const stamp = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-/.exec(run.runId);
  const created = recordOf(run.snapshot.value)?.createdAt;
  const event = eventsOf(run, 'run_created')[0];
  return [
    {
      what: `run id ${run.runId}`,
      ms:
        stamp === null
          ? Number.NaN
          : Date.parse(
              `${stamp[1]}-${stamp[2]}-${stamp[3]}T${stamp[4]}:${stamp[5]}:${stamp[6]}.999Z`,
            ),
    },
    {
      what: `snapshot.json createdAt ${String(created)}`,
      ms: typeof created === 'string' ? Date.parse(created) : Number.NaN,
    },
    { what: `run_created ${event?.ts ?? '(none)'}`, ms: Date.parse(event?.ts ?? '') },
  ];
}

/**
 * A run without a signature while a key is trusted (CFH-EVID-2). A key signs the runs that
 * start after it was made (its creation time is recorded beside it, operator.ed25519.json,
 * where the run's writer cannot change it): a run counts as older only when every record of
 * its start (startRecords) is before that time, and is then a warn that names the key; any
 * other unsigned run fails. Those records are the evidence a signature would protect: a
 * writer who rewrites all of them, and the directory's name, can make a run look older, as a
 * writer who deletes a signature of a run it rewrote consistently cannot be caught without
 * one; `--require-signature` fails every unsigned run (docs/operators.md).
 */
function unsignedWithKey(run: RunEvidence, key: TrustedKey): Outcome {
  const missing = 'signature.json: missing';
  const keyMs = key.createdAt === undefined ? Number.NaN : Date.parse(key.createdAt);
  const starts = startRecords(run);
  const later = starts.filter((s) => !(s.ms < keyMs));
  if (Number.isFinite(keyMs) && later.length === 0)
    return warn(
      `unsigned (before key ${shownFingerprint(key.fingerprint)}, created ${key.createdAt ?? ''}): every record of the run's start (${starts.map((s) => s.what).join(', ')}) is before the key existed; cfh audit --require-signature fails it`,
      [missing],
    );
  const why =
    key.createdAt === undefined
      ? 'the trusted key has no creation record beside it, so every unsigned run fails'
      : `key ${shownFingerprint(key.fingerprint)} was created ${key.createdAt}, and the run's ${later.map((s) => s.what).join(', ')} is not before it`;
  return fail(`signing is configured (a trusted key is set) but the run has no signature: ${why}`, [
    missing,
  ]);
}

export const schemaCheck: Check = {
  id: 'evidence.schema',
  title: 'events, report, state and signature match the published schema',
  clauses: ['CFH-EVID-1'],
  run({ run }) {
    const where: string[] = [];
    for (const e of run.events) for (const issue of e.issues) where.push(`${at(e)}: ${issue}`);
    const docs = [
      [RUN_FILES.report, run.report, Report],
      [RUN_FILES.state, run.state, RunState],
      [RUN_FILES.signature, run.signature, RunSignature],
    ] as const;
    for (const [name, doc, schema] of docs) {
      if (!doc.present) continue;
      if (doc.problem !== undefined) {
        where.push(doc.problem);
        continue;
      }
      const parsed = schema.safeParse(doc.value);
      if (!parsed.success)
        for (const i of parsed.error.issues) where.push(`${name} ${issueText(i)}`);
    }
    for (const t of run.transcript ?? [])
      if (t.problem !== undefined)
        where.push(t.line === 0 ? t.problem : `transcript.jsonl:${t.line}: ${t.problem}`);
    if (run.events.length === 0) return inconclusive('no event could be read');
    return where.length === 0
      ? pass(`${run.events.length} events and every document match their schemas`)
      : fail('evidence outside its schema', where);
  },
};

/**
 * The verifier of a run's evidence (verify-run.ts): what `runs show`, `cfh audit` and every
 * command that acts on a run (runs diff/apply, --from-plan) check alike. The audit adds its
 * clause checks after these.
 */
export const INTEGRITY_CHECKS: readonly Check[] = [
  chainCheck,
  anchorCheck,
  digestsCheck,
  unaccountedCheck,
  signatureCheck,
  schemaCheck,
];
