// Information flow control over values and authority: a handle resolved before policy and
// only if minted (AH-CFC-18), direct-command authority only from the capture of the exact
// `--prompt` value (AH-CFC-3/4/5), and handle values kept out of the evidence (AH-CFC-16/17/19).
import { z } from 'zod';
import { PromptSlotsRecord } from '../schema/snapshot.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { cfcStateOf, list, subset } from './checks-cfc.js';
import { partOf } from './parts.js';
import { eventsOf, unreadable } from './run-evidence.js';
import { HELD_VALUES_DIR, heldValueFile } from '../schema/held-value.js';

/** cfh's own integrity atom of the bound direct command. */
const PROMPT_DIRECT = 'prompt:direct';

export const handlesBeforePolicyCheck: Check = {
  id: 'cfc.handles-before-policy',
  title: 'a handle is resolved only if held, and before its call is judged by flow and policy',
  clauses: ['AH-CFC-18', 'AH-REF-2'],
  run({ run }) {
    const state = cfcStateOf(run);
    if (state.kind !== 'recorded' || state.mode === 'disabled')
      return notApplicable('CFC disabled or not recorded: no handle is minted');
    if (unreadable(run, 'cfc_handle', 'cfc_flow') > 0)
      return inconclusive('some CFC events cannot be read');
    const handles = eventsOf(run, 'cfc_handle');
    const minted = handles.filter((h) => h.data.action === 'minted');
    // What the run holds: minted here, or held again from the run it continues.
    const held = handles.filter((h) => h.data.action !== 'resolved');
    const resolved = handles.filter((h) => h.data.action === 'resolved');
    const decisions = eventsOf(run, 'permission_decision');
    const flows = eventsOf(run, 'cfc_flow');
    const where: string[] = [];
    const ids = new Set<string>();
    for (const m of held) {
      if (ids.has(m.data.handle)) where.push(`${at(m)}: ${m.data.handle} held twice`);
      ids.add(m.data.handle);
    }
    for (const r of resolved) {
      const { handle, callId } = r.data;
      const origin = held.find((m) => m.data.handle === handle && m.seq < r.seq);
      if (origin === undefined) {
        where.push(`${at(r)}: ${handle} resolved for ${callId}, yet never minted before`);
        continue;
      }
      if (
        origin.data.integrityCounts !== r.data.integrityCounts ||
        JSON.stringify(origin.data.label) !== JSON.stringify(r.data.label)
      )
        where.push(`${at(r)}: ${handle} resolved with another label than held (${at(origin)})`);
      const decision = decisions.find((d) => d.data.call_id === callId);
      if (decision !== undefined && decision.seq < r.seq)
        where.push(
          `${at(r)}: ${handle} resolved after ${callId}'s permission_decision (${at(decision)})`,
        );
      const flow = flows.find((f) => f.data.callId === callId);
      if (flow !== undefined) {
        if (flow.seq < r.seq)
          where.push(`${at(r)}: ${handle} resolved after ${callId}'s flow decision (${at(flow)})`);
        if (!flow.data.handles.includes(handle))
          where.push(`${at(flow)}: ${callId}'s flow does not name ${handle}, which it used`);
        // The value is judged like the value itself: its label is the call's explicit input.
        const explicit = flow.data.explicit?.confidentiality ?? [];
        if (!subset(r.data.label.confidentiality, explicit))
          where.push(
            `${at(flow)}: ${callId} used ${handle} labelled ${list(r.data.label.confidentiality)}, its explicit inputs carry ${list(explicit)}`,
          );
      }
    }
    return where.length === 0
      ? pass(`${minted.length} handle(s) minted, ${resolved.length} resolved, each before policy`)
      : fail('a handle resolved out of order or never minted', where);
  },
};

const Caller = z.looseObject({ uid: z.number().int().optional() });

export const promptAuthorityCheck: Check = {
  id: 'cfc.prompt-authority',
  title: 'prompt:direct only from a capture of the exact --prompt value, by the OS user',
  clauses: ['AH-CFC-3', 'AH-CFC-4', 'AH-CFC-5'],
  run({ run }) {
    if (unreadable(run, 'prompt_captured', 'cfc_influence', 'cfc_flow') > 0)
      return inconclusive('some CFC events cannot be read');
    const captures = eventsOf(run, 'prompt_captured');
    const influences = eventsOf(run, 'cfc_influence');
    const flows = eventsOf(run, 'cfc_flow');
    const carrying = [
      ...influences.filter((i) => i.data.label.integrity.includes(PROMPT_DIRECT)),
      ...flows.filter((f) => f.data.influence.integrity.includes(PROMPT_DIRECT)),
    ];
    const state = cfcStateOf(run);
    const named = state.kind === 'recorded' ? state.cfc.promptCapture : null;
    if (captures.length === 0 && carrying.length === 0 && named === null)
      return notApplicable('no direct-command authority was minted');
    const slots = partOf(run.snapshot.value, 'promptSlots', PromptSlotsRecord);
    const caller = partOf(run.snapshot.value, 'caller', Caller);
    const where: string[] = [];
    // Only the exact --prompt value is captured: a plan, context, quoted text or anything
    // re-rendered has another digest and so no capture (AH-CFC-4/5).
    const want = slots.ok ? slots.value.directCommand.digest.slice('sha256:'.length) : undefined;
    if (captures.length > 1) where.push(`${captures.length} prompt_captured records (one slot)`);
    for (const c of captures) {
      const d = c.data;
      if (want === undefined) where.push(`${at(c)}: a capture in a run without a direct command`);
      else if (d.sha256 !== want)
        where.push(`${at(c)}: captured a value other than the direct command the snapshot digests`);
      if (slots.ok && d.chars !== slots.value.directCommand.chars)
        where.push(
          `${at(c)}: ${d.chars} chars, the direct command has ${slots.value.directCommand.chars}`,
        );
      const uid = caller.ok ? caller.value.uid : undefined;
      if (!d.subject.vouched && uid !== undefined && d.subject.uid !== uid)
        where.push(
          `${at(c)}: subject uid ${String(d.subject.uid)}, the run's caller is uid ${uid}`,
        );
    }
    const valid = new Set(
      captures
        .filter((c) => want !== undefined && c.data.sha256 === want)
        .map((c) => c.data.captureId),
    );
    if (named !== null && !valid.has(named))
      where.push(
        `snapshot.json cfc.promptCapture: ${named} names no capture of the direct command`,
      );
    for (const e of carrying)
      if (!captures.some((c) => valid.has(c.data.captureId) && c.seq < e.seq))
        where.push(
          `${at(e)}: carries ${PROMPT_DIRECT} with no capture of the direct command before it`,
        );
    for (const e of [...influences, ...flows]) {
      const authority = e.data.authority;
      if (authority !== null && !valid.has(authority))
        where.push(`${at(e)}: authority ${authority} is no capture of the direct command`);
    }
    return where.length === 0
      ? pass(
          `${captures.length} capture(s) of the direct command; ${carrying.length} record(s) carry ${PROMPT_DIRECT}, each after it`,
        )
      : fail('direct-command authority without its capture', where);
  },
};

/** A file name that would hold a handle table (cfh keeps it in memory only). */
const HANDLE_TABLE = /(^|\/)[^/]*handle[^/]*$/i;

export const evidenceBoundaryCheck: Check = {
  id: 'cfc.evidence-boundary',
  title:
    'CFC evidence in the chained events beside the transcript; held values only under cfc-handles/, one per handle held',
  clauses: ['AH-CFC-16', 'AH-CFC-17', 'AH-CFC-19', 'AH-REF-3'],
  run({ run }) {
    const state = cfcStateOf(run);
    const raw = run.events.filter((e) => e.type.startsWith('cfc_') || e.type === 'prompt_captured');
    if ((state.kind !== 'recorded' || state.mode === 'disabled') && raw.length === 0)
      return notApplicable('CFC disabled or not recorded: no CFC evidence to keep');
    const where: string[] = [];
    const held = new Set<string>();
    for (const e of raw) {
      // A handle's value never enters the events, nor anything that answers a guess of it.
      if (e.type === 'cfc_handle' && (Object.hasOwn(e.data, 'value') || hasDigest(e.data)))
        where.push(`${at(e)}: a handle event carries its value or a digest of it`);
      if (e.parsed === undefined)
        where.push(`${at(e)}: ${e.type} outside its schema (${e.issues.slice(0, 2).join('; ')})`);
      const h = e.type === 'cfc_handle' ? e.data : undefined;
      if (h !== undefined && h.action !== 'resolved' && typeof h.handle === 'string')
        held.add(heldValueFile(h.handle));
    }
    for (const f of run.files) {
      // The values the run holds: one file per handle it held, under cfc-handles/ only.
      if (f.rel.startsWith(`${HELD_VALUES_DIR}/`)) {
        if (!held.has(f.rel)) where.push(`${f.rel}: a held value no cfc_handle event holds`);
        held.delete(f.rel);
      } else if (HANDLE_TABLE.test(f.rel))
        where.push(`${f.rel}: a handle table kept outside ${HELD_VALUES_DIR}/`);
    }
    for (const missing of held) where.push(`${missing}: a handle held, its value not kept`);
    return where.length === 0
      ? pass(
          `${raw.length} CFC event(s) in the hash chain, none with a handle value or digest; held values only under ${HELD_VALUES_DIR}/ among ${run.files.length} file(s)`,
        )
      : fail('CFC evidence outside its boundary', where);
  },
};

/** A field that looks like a digest of the value (a 64-hex string, or one named so). */
function hasDigest(data: Readonly<Record<string, unknown>>): boolean {
  return Object.entries(data).some(
    ([k, v]) =>
      /sha|digest|hash|hmac/i.test(k) || (typeof v === 'string' && /[0-9a-f]{64}/.test(v)),
  );
}
