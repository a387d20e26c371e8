// `cfh labels`: what runs wrote into host trees (cfc/written-labels.ts), as the state
// directory records it; `cfh labels forget PATH`: the operator's word that the tree at PATH
// holds no more than its configured label again (a declassification by a person, said on
// stderr and never done by a run). Records of trees that no longer exist are pruned first.
import path from 'node:path';
import { forgetRecord, listRecords, pruneWritten } from '../../cfc/written-store.js';
import { describeLabel, label } from '../../cfc/label.js';
import { ConfigError } from '../../errors.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

export async function labelsListCommand(args: { json: boolean }, deps: CliDeps): Promise<number> {
  try {
    const dir = deps.env.writtenLabelsDir;
    const pruned = await pruneWritten(dir, deps.signal);
    const records = await listRecords(dir);
    if (args.json) {
      deps.printer.json({
        dir,
        pruned,
        trees: records.map(({ record }) => ({
          path: record.host,
          place: record.place,
          label: record.label,
          runs: record.runs,
        })),
      });
      return 0;
    }
    if (records.length === 0) deps.printer.out(`no tree holds what a run wrote (${dir})`);
    for (const { record } of records) {
      const last = record.runs.at(-1);
      deps.printer.out(
        `${record.host}  ${describeLabel(label(record.label))}  by ${String(record.runs.length)} run(s), last ${last?.runId ?? '-'} at ${last?.at ?? '-'}`,
      );
    }
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

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
