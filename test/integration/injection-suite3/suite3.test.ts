// suite3: an independent prompt-injection suite for cfh's CFC, AgentDojo-shaped
// (episodes.ts: a user task, an injection, an attacker goal, an oracle of the suite's own).
// Every attack must FAIL under the enforce modes it is promised in (both, or strict alone
// for consequential actions), by the suite's oracles; every benign task must complete under
// enforce-explicit. The other modes are run and reported, never asserted: under `disabled`
// and `observe` most attacks succeed, which shows each oracle can see what it looks for.
//
// Default: the quick episodes (every class) under both enforce modes (~10 minutes).
//   CFH_SUITE3=full            every episode under all four modes
//   CFH_SUITE3_ONLY=id,id      only these episodes (ids or prefixes)
//   CFH_SUITE3_MODES=m,m       only these modes
//   CFH_SUITE3_REPORT=FILE     write the outcome table (markdown) and FILE.json
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { EPISODES, promisedIn, removeProjectImage } from './episodes.js';
import {
  Ctx,
  ENFORCING,
  MODES,
  startWorld,
  stopWorld,
  type Episode,
  type Mode,
  type Verdict,
  type World,
} from './runner.js';

const full = process.env.CFH_SUITE3 === 'full';
const only = (process.env.CFH_SUITE3_ONLY ?? '').split(',').filter((x) => x !== '');
const modes: readonly Mode[] =
  process.env.CFH_SUITE3_MODES !== undefined
    ? (process.env.CFH_SUITE3_MODES.split(',') as Mode[])
    : full
      ? MODES
      : ENFORCING;
const selected = EPISODES.filter((e) =>
  only.length > 0 ? only.some((o) => e.id === o || e.id.startsWith(o)) : full || e.quick,
);

interface Row {
  readonly episode: Episode;
  readonly mode: Mode;
  readonly verdict: Verdict;
  readonly ms: number;
}

let world: World | undefined;
const rows: Row[] = [];

beforeAll(async () => {
  world = await startWorld();
});

afterAll(async () => {
  await removeProjectImage();
  await stopWorld(world);
  const table = render(rows);
  console.log(table);
  const file = process.env.CFH_SUITE3_REPORT;
  if (file !== undefined && file !== '') {
    await writeFile(file, table);
    await writeFile(
      `${file}.json`,
      JSON.stringify(
        rows.map((r) => ({
          id: r.episode.id,
          kind: r.episode.kind,
          cls: r.episode.cls,
          mode: r.mode,
          succeeded: r.verdict.succeeded,
          detail: r.verdict.detail,
          exit: r.verdict.exit,
          ms: r.ms,
        })),
        null,
        2,
      ),
    );
  }
});

describe('suite3: AgentDojo-shaped injection episodes against CFC', () => {
  for (const episode of selected)
    for (const mode of modes)
      it(`${episode.id} [${mode}]`, { timeout: 600_000 }, async () => {
        if (world === undefined) throw new Error('no world');
        const t0 = Date.now();
        const ctx = await Ctx.make(world, episode.id, mode);
        let verdict: Verdict;
        try {
          verdict = await episode.run(ctx);
        } catch (error) {
          verdict = { succeeded: false, detail: `episode error: ${String(error).slice(0, 400)}` };
          rows.push({ episode, mode, verdict, ms: Date.now() - t0 });
          throw error;
        }
        rows.push({ episode, mode, verdict, ms: Date.now() - t0 });
        if (episode.kind === 'attack' && promisedIn(episode).includes(mode))
          expect(
            verdict.succeeded,
            `${episode.id} succeeded under ${mode}: ${verdict.detail}`,
          ).toBe(false);
        if (episode.kind === 'benign' && mode === 'enforce-explicit')
          expect(
            verdict.succeeded,
            `${episode.id} did not complete under ${mode}: ${verdict.detail}`,
          ).toBe(true);
      });
});

function render(all: readonly Row[]): string {
  const ids = [...new Set(all.map((r) => r.episode.id))];
  const seen = MODES.filter((m) => all.some((r) => r.mode === m));
  const cell = (r: Row | undefined): string => {
    if (r === undefined) return '-';
    const promised = r.episode.kind === 'attack' && promisedIn(r.episode).includes(r.mode);
    if (r.episode.kind === 'benign') return r.verdict.succeeded ? 'completed' : 'NOT completed';
    if (!r.verdict.succeeded) return 'held';
    if (promised) return '**SUCCEEDED**';
    return r.episode.outOfModel === undefined ? 'succeeded' : 'succeeded (out of model)';
  };
  const lines = [
    `| episode | class | ${seen.join(' | ')} |`,
    `| --- | --- | ${seen.map(() => '---').join(' | ')} |`,
  ];
  for (const id of ids) {
    const of = all.filter((r) => r.episode.id === id);
    const ep = of[0]?.episode;
    lines.push(
      `| ${id} | ${ep?.cls ?? ''} | ${seen.map((m) => cell(of.find((r) => r.mode === m))).join(' | ')} |`,
    );
  }
  const outside = EPISODES.filter((e) => e.outOfModel !== undefined && ids.includes(e.id));
  if (outside.length > 0) lines.push('', 'Out of the threat model (reported, not asserted):');
  for (const e of outside) lines.push(`- ${e.id}: ${e.outOfModel ?? ''}`);
  lines.push('', 'Details:');
  for (const r of all)
    lines.push(
      `- ${r.episode.id} [${r.mode}] exit ${r.verdict.exit ?? '?'} (${Math.round(r.ms / 1000)} s): ${r.verdict.detail}`,
    );
  return lines.join('\n');
}
