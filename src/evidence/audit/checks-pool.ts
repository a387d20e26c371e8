// Per-call tool containers from a warm pool (issue 21, CFH-POOL-1), as the events tell it:
// each pooled container was made from the spec the snapshot records for its kind, handed
// out at most once and only after it was ready, ran at most one call and only after it was
// handed out, and was recorded removed; under per-call no two calls share a container.
import { z } from 'zod';
import { at, fail, inconclusive, notApplicable, pass, type Check } from './check.js';
import { partOf } from './parts.js';
import { eventsOf } from './run-evidence.js';

const PoolRecord = z.looseObject({
  lifetime: z.string(),
  pool: z
    .looseObject({
      size: z.number(),
      kinds: z.array(z.looseObject({ kind: z.string(), specDigest: z.string() })),
    })
    .nullable()
    .optional(),
});

export const poolCheck: Check = {
  id: 'lifecycle.pool',
  title: 'each per-call container made from the run spec, handed out once, ran one call, removed',
  clauses: ['CFH-POOL-1'],
  run({ run }) {
    const pooled = eventsOf(run, 'tool_container_pooled');
    const taken = eventsOf(run, 'tool_container_taken');
    const executed = eventsOf(run, 'tool_executed');
    const setting = partOf(run.snapshot.value, 'toolContainer', PoolRecord);
    if (!setting.ok) {
      if (pooled.length + taken.length === 0) return notApplicable('no tool container recorded');
      return inconclusive('snapshot.json toolContainer cannot be read');
    }
    if (setting.value.lifetime !== 'per-call' && pooled.length + taken.length === 0)
      return notApplicable('per-run tool containers: no pool');
    const where: string[] = [];
    const digests = new Map((setting.value.pool?.kinds ?? []).map((k) => [k.kind, k.specDigest]));
    const ready = new Map<string, number>();
    for (const p of pooled) {
      if (digests.get(p.data.kind) !== p.data.specDigest)
        where.push(
          `${at(p)}: ${p.data.name} made for spec ${p.data.specDigest.slice(0, 12)}, not the snapshot's ${p.data.kind} spec`,
        );
      ready.set(p.data.containerId, p.seq);
    }
    const handedOut = new Map<string, number>();
    for (const t of taken) {
      const madeAt = ready.get(t.data.containerId);
      if (madeAt === undefined || madeAt > t.seq)
        where.push(`${at(t)}: ${t.data.name} handed out before it was recorded ready in the pool`);
      if (handedOut.has(t.data.containerId))
        where.push(`${at(t)}: ${t.data.name} handed out a second time`);
      handedOut.set(t.data.containerId, t.seq);
    }
    if (setting.value.lifetime === 'per-call') {
      const used = new Set<string>();
      for (const x of executed) {
        const id = x.data.containerId;
        if (used.has(id))
          where.push(`${at(x)}: ${x.data.callId} ran in a container an earlier call used`);
        used.add(id);
        const out = handedOut.get(id);
        if (ready.has(id) && (out === undefined || out > x.seq))
          where.push(
            `${at(x)}: ${x.data.callId} ran in pooled container ${id.slice(0, 12)} that was never handed out to it`,
          );
      }
    }
    const removed = new Set(eventsOf(run, 'tool_container_removed').map((e) => e.data.containerId));
    for (const p of pooled)
      if (!removed.has(p.data.containerId))
        where.push(`${at(p)}: pooled container ${p.data.name} never recorded removed`);
    if (where.length > 0) return fail('a per-call container was not used once and removed', where);
    return pass(
      `${pooled.length} pooled container(s), ${taken.length} handed out once each, every one removed`,
    );
  },
};
