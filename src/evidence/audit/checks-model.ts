// The model route of a run (AH-INV-5, AH-INV-2): every attempt went to the route the snapshot
// names. Each `model_call_started` names its adapter and its route (provider, endpoint, model,
// wire, credential by reference); a run that moved to another route, credential or model
// after a failure would show an attempt that differs from the snapshot's.
import { z } from 'zod';
import { canonicalJson } from '../canonical-json.js';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf } from './run-evidence.js';

const SnapshotRoute = z.looseObject({
  adapter: z.string(),
  route: z.record(z.string(), z.string()),
});

export const oneRouteCheck: Check = {
  id: 'model.one-route',
  title: "every model attempt on the snapshot's route: no fallback to another",
  clauses: ['AH-INV-5'],
  run({ run }) {
    const starts = eventsOf(run, 'model_call_started');
    if (starts.length === 0) return notApplicable('no model attempt');
    const model = partOf(run.snapshot.value, 'model', SnapshotRoute);
    if (!model.ok) return inconclusive('snapshot.json model (adapter and route) cannot be read');
    const route = canonicalJson(model.value.route);
    const where: string[] = [];
    for (const e of starts) {
      if (e.data.adapter !== model.value.adapter)
        where.push(`${at(e)}: adapter ${e.data.adapter}, the snapshot's ${model.value.adapter}`);
      // Runs recorded before attempts named their route carry none: the adapter is all.
      if (e.data.route !== undefined && canonicalJson(e.data.route) !== route)
        where.push(`${at(e)}: route ${JSON.stringify(e.data.route)}, the snapshot's ${route}`);
    }
    return where.length === 0
      ? pass(`${starts.length} attempt(s), all on ${model.value.adapter} ${route}`)
      : fail('an attempt went to another route than the snapshot names', where);
  },
};
