import { chown, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../src/evidence/atomic-file.js';
import { canonicalJson } from '../../src/evidence/canonical-json.js';
import {
  EventLog,
  GENESIS_HASH,
  hashEvent,
  verifyEventChain,
  type EventRecord,
} from '../../src/evidence/event-log.js';
import { RUN_FILES, RunDirectory } from '../../src/evidence/run-directory.js';
import { RUN_ID_PATTERN, isRunId, newRunId } from '../../src/evidence/run-id.js';
import { ArtifactError } from '../../src/errors.js';
import { makeTempDir, must, removeTempDir } from './helpers.js';

const RUN_ID = '20240102T030405Z-0123abcd';

let tmp: string | undefined;

beforeEach(async () => {
  tmp = await makeTempDir('cfh-evidence-');
});

afterEach(async () => {
  await removeTempDir(tmp);
  tmp = undefined;
});

function dir(): string {
  if (tmp === undefined) throw new Error('temp dir not created');
  return tmp;
}

/** Writes `n` events through a real EventLog and returns the file body. */
async function writeEvents(n: number): Promise<string> {
  const file = path.join(dir(), 'events.jsonl');
  const log = await EventLog.create(file, RUN_ID);
  try {
    for (let i = 0; i < n; i += 1) await log.append('final_answer_produced', { chars: i });
  } finally {
    await log.close();
  }
  return readFile(file, 'utf8');
}

function lines(body: string): string[] {
  return body.split('\n').filter((l) => l !== '');
}

function join(ls: readonly string[]): string {
  return `${ls.join('\n')}\n`;
}

describe('EventLog', () => {
  it('numbers concurrently fired appends 1..n in call order and chains their hashes', async () => {
    const file = path.join(dir(), 'events.jsonl');
    const log = await EventLog.create(file, RUN_ID);
    const n = 40;
    let records: EventRecord[];
    try {
      records = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          log.append('final_answer_produced', { chars: i }, i % 7 === 0),
        ),
      );
      expect(log.lastSeq).toBe(n);
      expect(log.lastHash).toBe(must(records[n - 1]).hash);
    } finally {
      await log.close();
    }
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(records.map((r) => r.data.chars)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(must(records[0]).prevHash).toBe(GENESIS_HASH);
    for (let i = 1; i < n; i += 1) {
      expect(must(records[i]).prevHash).toBe(must(records[i - 1]).hash);
    }
    for (const r of records) {
      expect(r.runId).toBe(RUN_ID);
      const { hash, ...rest } = r;
      expect(hashEvent(rest)).toBe(hash);
    }

    const body = await readFile(file, 'utf8');
    const onDisk = lines(body).map((l) => JSON.parse(l) as EventRecord);
    expect(onDisk).toEqual(records);
    expect(verifyEventChain(body)).toEqual({ ok: true, events: n });
  });

  it('refuses to append after close', async () => {
    const log = await EventLog.create(path.join(dir(), 'events.jsonl'), RUN_ID);
    await log.append('cancelled', { signal: 'SIGINT' });
    await log.close();
    await expect(log.append('cancelled', { signal: 'SIGTERM' })).rejects.toThrow(/closed/);
    expect(log.lastSeq).toBe(1);
  });

  it('refuses to open an existing file (never appends to someone else’s log)', async () => {
    const file = path.join(dir(), 'events.jsonl');
    await writeFile(file, 'existing\n');
    await expect(EventLog.create(file, RUN_ID)).rejects.toThrow();
    expect(await readFile(file, 'utf8')).toBe('existing\n');
  });

  it('hashes a Date as the string written to disk, and the log refuses one where its schema wants a string', async () => {
    const base = { seq: 1, ts: 't', runId: RUN_ID, type: 'x', prevHash: GENESIS_HASH };
    expect(hashEvent({ ...base, data: { at: new Date(0) } })).toBe(
      hashEvent({ ...base, data: { at: new Date(0).toISOString() } }),
    );
    const file = path.join(dir(), 'events.jsonl');
    const log = await EventLog.create(file, RUN_ID);
    try {
      const startedAt: unknown = new Date(0);
      await expect(
        log.append('egress', {
          protocol: 'dns',
          via: 'resolver',
          allowed: false,
          reason: 'dns-refused',
          bytesOut: 0,
          bytesIn: 0,
          startedAt: startedAt as string,
          durationMs: 0,
        }),
      ).rejects.toMatchObject({ code: 'evidence_schema_violation' });
      await log.append('cancelled', { signal: 'SIGINT' });
    } finally {
      await log.close();
    }
    expect(verifyEventChain(await readFile(file, 'utf8'))).toEqual({ ok: true, events: 1 });
  });
});

describe('verifyEventChain', () => {
  it('accepts an untouched log and an empty one', async () => {
    expect(verifyEventChain(await writeEvents(5))).toEqual({ ok: true, events: 5 });
    expect(verifyEventChain('')).toEqual({ ok: true, events: 0 });
  });

  it('detects an edited data field', async () => {
    const ls = lines(await writeEvents(5));
    const record = JSON.parse(must(ls[2])) as EventRecord;
    ls[2] = JSON.stringify({ ...record, data: { i: 99 } });
    const check = verifyEventChain(join(ls));
    expect(check.ok).toBe(false);
    expect(check.events).toBe(2);
    expect(check.problem).toContain('seq 3');
  });

  it('detects an edited line whose own hash was recomputed, at the next line', async () => {
    const ls = lines(await writeEvents(5));
    const original = JSON.parse(must(ls[1])) as EventRecord;
    const forged = {
      seq: original.seq,
      ts: original.ts,
      runId: original.runId,
      type: original.type,
      data: { i: 42 },
      prevHash: original.prevHash,
    };
    ls[1] = JSON.stringify({ ...forged, hash: hashEvent(forged) });
    expect(verifyEventChain(join(ls.slice(0, 2))).ok).toBe(true);
    const check = verifyEventChain(join(ls));
    expect(check.ok).toBe(false);
    expect(check.events).toBe(2);
    expect(check.problem).toContain('prevHash');
  });

  it('detects a deleted line', async () => {
    const ls = lines(await writeEvents(5));
    ls.splice(2, 1);
    const check = verifyEventChain(join(ls));
    expect(check.ok).toBe(false);
    expect(check.events).toBe(2);
  });

  it('detects two swapped lines', async () => {
    const ls = lines(await writeEvents(5));
    const [a, b] = [must(ls[1]), must(ls[2])];
    ls[1] = b;
    ls[2] = a;
    const check = verifyEventChain(join(ls));
    expect(check.ok).toBe(false);
    expect(check.events).toBe(1);
  });

  it('detects an added field', async () => {
    const ls = lines(await writeEvents(3));
    const record = JSON.parse(must(ls[0])) as EventRecord;
    ls[0] = JSON.stringify({ ...record, extra: true });
    expect(verifyEventChain(join(ls)).ok).toBe(false);
  });

  it('reports, rather than throws on, a line that is not JSON', async () => {
    const body = `${await writeEvents(2)}{"seq":3,"ts":"2024-01-0\n`;
    let check: ReturnType<typeof verifyEventChain> | undefined;
    expect(() => {
      check = verifyEventChain(body);
    }).not.toThrow();
    expect(check?.ok).toBe(false);
    expect(check?.events).toBe(2);
  });
});

describe('writeJsonAtomic', () => {
  it('writes pretty JSON, replaces it, and leaves no temp files', async () => {
    const target = path.join(dir(), 'state.json');
    await writeJsonAtomic(target, { state: 'created', n: 1 });
    expect(await readFile(target, 'utf8')).toBe(
      `${JSON.stringify({ state: 'created', n: 1 }, null, 2)}\n`,
    );
    await writeJsonAtomic(target, { state: 'finished' });
    expect(JSON.parse(await readFile(target, 'utf8'))).toEqual({ state: 'finished' });
    expect(await readdir(dir())).toEqual(['state.json']);
  });

  it('survives concurrent writers with one complete document and no leftovers', async () => {
    const target = path.join(dir(), 'state.json');
    await Promise.all(Array.from({ length: 10 }, (_, i) => writeJsonAtomic(target, { i })));
    const value = JSON.parse(await readFile(target, 'utf8')) as { i: number };
    expect(value.i).toBeGreaterThanOrEqual(0);
    expect(value.i).toBeLessThan(10);
    expect(await readdir(dir())).toEqual(['state.json']);
  });

  it('rejects when the directory is missing and creates nothing', async () => {
    await expect(
      writeJsonAtomic(path.join(dir(), 'nope', 'state.json'), { a: 1 }),
    ).rejects.toThrow();
    expect(await readdir(dir())).toEqual([]);
  });
});

describe('canonicalJson', () => {
  it('hashes a key spelled __proto__ as data: a line that adds one hashes differently', () => {
    const plain = JSON.parse('{"type":"x","data":{}}') as unknown;
    const added = JSON.parse('{"type":"x","data":{},"__proto__":{"forged":true}}') as unknown;
    expect(canonicalJson(added)).toBe('{"__proto__":{"forged":true},"data":{},"type":"x"}');
    expect(canonicalJson(added)).not.toBe(canonicalJson(plain));
  });

  it('sorts keys at every depth, including inside arrays, without whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}',
    );
  });

  it('is independent of insertion order but keeps array order', () => {
    expect(canonicalJson({ x: 1, y: { q: 2, p: 3 } })).toBe(
      canonicalJson({ y: { p: 3, q: 2 }, x: 1 }),
    );
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
  });

  it('passes scalars through as JSON', () => {
    expect(canonicalJson('s')).toBe('"s"');
    expect(canonicalJson(3)).toBe('3');
    expect(canonicalJson(null)).toBe('null');
  });
});

describe('run ids', () => {
  it('formats a UTC timestamp and eight hex digits', () => {
    const id = newRunId(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678)));
    expect(id).toMatch(/^20240102T030405Z-[0-9a-f]{8}$/);
    expect(isRunId(id)).toBe(true);
    expect(RUN_ID_PATTERN.test(newRunId())).toBe(true);
  });

  it('is unique for the same instant', () => {
    const now = new Date();
    const ids = new Set(Array.from({ length: 20 }, () => newRunId(now)));
    expect(ids.size).toBe(20);
  });

  it.each([
    '',
    '../etc',
    '20240102T030405Z',
    '20240102T030405Z-0123ABCD',
    '20240102T030405Z-0123abc',
    '20240102T030405Z-0123abcde',
    '20240102T030405Z-0123abcd/..',
    `${RUN_ID}\n`,
    `x${RUN_ID}`,
  ])('rejects %j', (value) => {
    expect(isRunId(value)).toBe(false);
  });
});

describe('RunDirectory', () => {
  it('refuses a malformed run id and creates nothing', async () => {
    const root = path.join(dir(), 'runs');
    const error: unknown = await RunDirectory.create(root, '../escape').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ArtifactError);
    expect((error as ArtifactError).code).toBe('invalid_run_id');
    expect(await readdir(dir())).toEqual([]);
  });

  it.runIf(process.getuid?.() === 0)(
    'refuses, before any write, a root someone else made since planning',
    async () => {
      // A recursive mkdir takes the directory it finds: made by another user in the window
      // between planning and the run, it would hold the evidence where they can swap it.
      const root = path.join(dir(), 'theirs');
      await mkdir(root);
      await chown(root, 4321, 4321);
      const error: unknown = await RunDirectory.create(root, RUN_ID).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ArtifactError);
      expect((error as ArtifactError).code).toBe('artifact_root_shared');
      expect((error as ArtifactError).message).toContain('uid 4321');
      expect(await readdir(root)).toEqual([]);
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'makes the artifact root one directory at a time, never inside or through theirs',
    async () => {
      const theirs = path.join(dir(), 'theirs-above');
      const victim = path.join(dir(), 'victim');
      await mkdir(theirs);
      await mkdir(victim);
      await symlink(victim, path.join(theirs, 'link'));
      await chown(theirs, 4321, 4321);
      for (const root of [path.join(theirs, 'new', 'runs'), path.join(theirs, 'link', 'runs')]) {
        const error: unknown = await RunDirectory.create(root, RUN_ID).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((error as ArtifactError).code).toBe('artifact_root_shared');
      }
      // Nothing was made in their directory, nor where their link points.
      expect((await readdir(theirs)).sort()).toEqual(['link']);
      expect(await readdir(victim)).toEqual([]);
    },
  );

  it('creates the layout for a valid id and writes a verifiable event log', async () => {
    const root = path.join(dir(), 'runs');
    const run = await RunDirectory.create(root, RUN_ID);
    try {
      expect(run.dir).toBe(path.join(root, RUN_ID));
      await run.events.append(
        'run_created',
        { kind: 'command', profile: 'p', imageId: 'sha256:0' },
        true,
      );
      await run.writeProgress('created');
    } finally {
      await run.close();
    }
    const entries = await readdir(run.dir);
    expect(entries).toEqual(
      expect.arrayContaining([RUN_FILES.events, RUN_FILES.outputs, RUN_FILES.state]),
    );
    expect(entries).not.toContain(RUN_FILES.lock);
    const body = await readFile(run.path(RUN_FILES.events), 'utf8');
    expect(verifyEventChain(body)).toEqual({ ok: true, events: 1 });
  });

  it('writes state.json, naming its writer, as the very first file of the run', async () => {
    const root = path.join(dir(), 'runs');
    const writer = { pid: 4242, start: 'boot/123', host: 'h.test' };
    const run = await RunDirectory.create(root, RUN_ID, writer);
    try {
      // Before any event, snapshot or progress: a reader can already judge the writer.
      expect(JSON.parse(await readFile(run.path(RUN_FILES.state), 'utf8'))).toMatchObject({
        runId: RUN_ID,
        state: 'created',
        writer,
      });
      expect(await readFile(run.path(RUN_FILES.events), 'utf8')).toBe('');
    } finally {
      await run.close();
    }
  });

  it('refuses to reuse an existing run directory', async () => {
    const root = path.join(dir(), 'runs');
    await mkdir(path.join(root, RUN_ID), { recursive: true });
    await expect(RunDirectory.create(root, RUN_ID)).rejects.toMatchObject({
      code: 'artifact_write_failed',
    });
  });
});
