// A session's event feed (src/session/event-feed.ts): nothing is sent before it is durable,
// a durable record's own fsync covers every record before it (no sync of the feed's own),
// a burst without one is synced once after GROUP_COMMIT_MS, and order is kept throughout.
// The feed syncs through the log's own descriptor: it goes on while the process acts under
// another identity that may not open the run directory (a draft copied as its owner).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventLog, type EventRecord } from '../../src/evidence/event-log.js';
import { authorityFor } from '../../src/engine/run/write-authority.js';
import { DurableFeed, GROUP_COMMIT_MS } from '../../src/session/event-feed.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-feed-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A stand-in for EventLog.sync (the log's own fdatasync). */
const sync = (): Promise<void> => Promise.resolve();

function record(seq: number): EventRecord {
  return {
    schema: 'cfh.event/1',
    seq,
    ts: '',
    runId: 'r',
    type: 't',
    data: {},
    prevHash: '',
    hash: '',
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DurableFeed', () => {
  it('sends records before a durable one with it, without a sync of its own', async () => {
    const sent: number[] = [];
    const feed = new DurableFeed((r) => sent.push(r.seq));
    feed.listener('', record(1), false, sync);
    feed.listener('', record(2), false, sync);
    // Not durable yet: nothing is sent.
    expect(sent).toEqual([]);
    feed.listener('', record(3), true, sync);
    await feed.settle();
    expect(sent).toEqual([1, 2, 3]);
    expect(feed.syncs).toBe(0);
    expect(feed.durableSeq).toBe(3);
    await feed.close();
  });

  it('syncs a burst with no durable record once, after the group-commit delay', async () => {
    const sent: number[] = [];
    const feed = new DurableFeed((r) => sent.push(r.seq));
    feed.listener('', record(1), false, sync);
    feed.listener('', record(2), false, sync);
    await sleep(GROUP_COMMIT_MS / 2);
    expect(sent).toEqual([]);
    await sleep(GROUP_COMMIT_MS * 4);
    await feed.settle();
    expect(sent).toEqual([1, 2]);
    expect(feed.syncs).toBe(1);
    await feed.close();
  });

  it('settle sends what is pending at once (synced), keeping the order across batches', async () => {
    const sent: number[] = [];
    const feed = new DurableFeed((r) => sent.push(r.seq));
    feed.listener('', record(1), false, sync);
    await feed.settle();
    expect(sent).toEqual([1]);
    expect(feed.syncs).toBe(1);
    feed.listener('', record(2), false, sync);
    feed.listener('', record(3), true, sync);
    feed.listener('', record(4), false, sync);
    await feed.settle();
    expect(sent).toEqual([1, 2, 3, 4]);
    // 2 and 3 rode on 3's own fsync; 4 needed the feed's.
    expect(feed.syncs).toBe(2);
    await feed.close();
  });

  it.runIf(process.geteuid?.() === 0)(
    "goes on while the process acts as a workspace's owner, who may not open the run's files",
    async () => {
      // The run directory is root's alone (0700), as an artifact root's runs are.
      const log = await EventLog.create(path.join(dir, 'events.jsonl'), 'r');
      const sent: number[] = [];
      const feed = new DurableFeed((r) => sent.push(r.seq));
      log.subscribe(feed.listener);
      await authorityFor({ uid: 4321, gid: 4321 }).asWriter(async () => {
        await log.append('run_created', { kind: 'command', profile: 'p', imageId: 'i' });
        await feed.settle();
      });
      expect(sent).toEqual([1]);
      expect(feed.syncs).toBe(1);
      await feed.close();
      await log.close();
    },
  );
});
