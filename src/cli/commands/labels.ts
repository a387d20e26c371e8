// `cfh labels`: what runs wrote into host trees (cfc/written-labels.ts), as the state
// directory records it; `cfh labels forget PATH`: the operator's word that the tree at PATH
// holds no more than its configured label again (a declassification by a person, said on
// stderr and never done by a run). A record whose tree is not at its place any more (moved,
// renamed or deleted: cfh cannot tell which) is listed as such and kept: its label follows
// the tree wherever a run finds it (engine/cfc/written-moved.ts); only `forget` removes it.
import path from 'node:path';
import { identityAt, sameIdentity } from '../../cfc/tree-identity.js';
import type { WrittenRecord } from '../../cfc/written-labels.js';
import { forgetRecord, listRecords } from '../../cfc/written-store.js';
import { describeLabel, label } from '../../cfc/label.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

export async function labelsListCommand(args: { json: boolean }, deps: CliDeps): Promise<number> {
  try {
    const dir = deps.env.writtenLabelsDir;
    deps.signal.throwIfAborted();
    const records = await listRecords(dir);
    if (args.json) {
      deps.printer.json({
        dir,
        trees: records.map(({ record }) => ({
          path: record.host,
          place: record.place,
          state: stateOf(record),
          label: record.label,
          runs: record.runs,
        })),
      });
      return 0;
    }
    if (records.length === 0) deps.printer.out(`no tree holds what a run wrote (${dir})`);
    for (const { record } of records) {
      const last = record.runs.at(-1);
      const away = STATE_NOTE[stateOf(record)];
      deps.printer.out(
        `${record.host}  ${describeLabel(label(record.label))}  by ${String(record.runs.length)} run(s), last ${last?.runId ?? '-'} at ${last?.at ?? '-'}${away}`,
      );
    }
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

type TreeState = 'here' | 'replaced' | 'away';

/**
 * `here`: the tree is at the path it was written through; `replaced`: another object is
 * there now (an atomic save replaces a file): the label holds at the place, and follows the
 * old object too; `away`: nothing is there (moved, renamed or deleted: cfh cannot tell).
 */
function stateOf(record: WrittenRecord): TreeState {
  const now = identityAt(record.host);
  if (now === undefined) return 'away';
  return record.identity === undefined || sameIdentity(now, record.identity) ? 'here' : 'replaced';
}

const STATE_NOTE: Readonly<Record<TreeState, string>> = {
  here: '',
  replaced:
    '  (another object at this path since: the label holds here, and where the old one went)',
  away: '  (not at this path: moved, renamed or deleted)',
};

export async function labelsForgetCommand(
  args: { path: string; json: boolean },
  deps: CliDeps,
): Promise<number> {
  try {
    const wanted = path.resolve(args.path);
    const records = await listRecords(deps.env.writtenLabelsDir);
    const match = records.filter(({ record }) => path.resolve(record.host) === wanted);
    if (match.length === 0)
      throw new ConfigError(
        'written_label_unknown',
        `labels forget: no record of what runs wrote into '${wanted}'`,
        { field: 'path', value: wanted },
        'cfh labels lists the trees it holds records for, by the path they were mounted from',
      );
    const forgotten = [];
    for (const { file } of match) {
      const r = await forgetRecord(file);
      if (r !== undefined) forgotten.push(r);
    }
    const runs = [...new Set(forgotten.flatMap((r) => r.runs.map((x) => x.runId)))];
    if (args.json)
      deps.printer.json({ path: wanted, forgotten: forgotten.map((r) => r.label), runs });
    else
      deps.printer.out(
        `forgot what ${String(runs.length)} run(s) wrote into ${wanted}: later runs mount it under its configured label`,
      );
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}
