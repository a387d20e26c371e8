// Seeded violations: a copy of a real run directory changed the way a buggy or malicious
// writer would. `forge` changes the evidence and then makes it consistent again (every
// digest, the chain, the report digest and both anchors re-computed), so only the one
// clause the change violates is broken; `tamper` is a raw edit that re-seals nothing.
import { createHash } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GENESIS_HASH, hashEvent } from '../../src/evidence/event-log.js';
import { reportDigest } from '../../src/evidence/run-directory.js';

export interface Forgery {
  events: Record<string, any>[];
  snapshot: Record<string, any>;
  report: Record<string, any>;
  state: Record<string, any>;
  transcript: Record<string, any>[] | undefined;
  /** Other recorded files to rewrite (patch/patch.json, plan.md): re-sealed like the rest. */
  readonly files: Map<string, string>;
  readonly dir: string;
}

let copies = 0;

/** A copy of `run` under `root`/copy-N/, returning the copy's directory. */
export async function copyRun(run: string, root: string): Promise<string> {
  const dir = path.join(root, `copy-${copies++}`, path.basename(run));
  await cp(run, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

const lines = async (file: string): Promise<Record<string, any>[]> =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, any>);

const sha = (body: string | Buffer): string => createHash('sha256').update(body).digest('hex');

export async function forge(dir: string, edit: (f: Forgery) => void): Promise<void> {
  const json = async (name: string) =>
    JSON.parse(await readFile(path.join(dir, name), 'utf8')) as Record<string, any>;
  const transcriptFile = path.join(dir, 'transcript.jsonl');
  const f: Forgery = {
    dir,
    events: await lines(path.join(dir, 'events.jsonl')),
    snapshot: await json('snapshot.json'),
    report: await json('report.json'),
    state: await json('state.json'),
    transcript: await lines(transcriptFile).catch(() => undefined),
    files: new Map(),
  };
  edit(f);
  const bodies = new Map<string, string>([
    ['snapshot.json', `${JSON.stringify(f.snapshot, null, 2)}\n`],
  ]);
  if (f.transcript !== undefined)
    bodies.set('transcript.jsonl', f.transcript.map((m) => `${JSON.stringify(m)}\n`).join(''));
  for (const [name, body] of f.files) bodies.set(name, body);
  for (const [name, body] of bodies) await writeFile(path.join(dir, name), body);
  // Re-seal: artifact digests, the report digest, the chain, the anchors.
  const reportBody = Object.fromEntries(
    Object.entries(f.report).filter(([k]) => k !== 'lastEvent'),
  );
  let prev = GENESIS_HASH;
  const out: string[] = [];
  for (const [i, e] of f.events.entries()) {
    const rest: Record<string, any> = { ...e, seq: i + 1, prevHash: prev };
    delete rest.hash;
    const body = bodies.get(rest.data?.file);
    if (rest.type === 'artifact_written' && body !== undefined)
      rest.data = {
        ...rest.data,
        sha256: sha(body),
        ...(rest.data.bytes === undefined ? {} : { bytes: Buffer.byteLength(body) }),
      };
    if (rest.type === 'run_finished')
      rest.data = { ...rest.data, reportSha256: reportDigest(reportBody) };
    const hash = hashEvent(rest as Parameters<typeof hashEvent>[0]);
    out.push(JSON.stringify({ ...rest, hash }));
    prev = hash;
  }
  const last = JSON.parse(out.at(-1) ?? '{}') as { seq: number; hash: string };
  await writeFile(path.join(dir, 'events.jsonl'), `${out.join('\n')}\n`);
  const anchor = { seq: last.seq, hash: last.hash };
  await writeFile(
    path.join(dir, 'report.json'),
    `${JSON.stringify({ ...reportBody, lastEvent: anchor }, null, 2)}\n`,
  );
  await writeFile(
    path.join(dir, 'state.json'),
    `${JSON.stringify({ ...f.state, lastEvent: anchor }, null, 2)}\n`,
  );
}

/** The index of the first event of `type` (matching `where`), for edits. */
export function indexOf(
  f: Forgery,
  type: string,
  where: (data: Record<string, any>) => boolean = () => true,
): number {
  const i = f.events.findIndex((e) => e.type === type && where(e.data));
  if (i < 0) throw new Error(`no ${type} event to forge`);
  return i;
}

/** The first event of `type` (matching `where`), to edit in place. */
export function eventOf(
  f: Forgery,
  type: string,
  where: (data: Record<string, any>) => boolean = () => true,
): Record<string, any> {
  const e = f.events[indexOf(f, type, where)];
  if (e === undefined) throw new Error(`no ${type} event to forge`);
  return e;
}
