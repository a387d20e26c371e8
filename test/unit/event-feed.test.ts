// A session's event feed (src/session/event-feed.ts): nothing is sent before it is durable,
// a durable record's own fsync covers every record before it (no sync of the feed's own),
// a burst without one is synced once after GROUP_COMMIT_MS, and order is kept throughout.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/evidence/event-log.js';
import { DurableFeed, GROUP_COMMIT_MS } from '../../src/session/event-feed.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfh-feed-'));
  file = path.join(dir, 'events.jsonl');
  await writeFile(file, '');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

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
    const feed = new DurableFeed(file, (r) => sent.push(r.seq));
    feed.listener('', record(1), false);
    feed.listener('', record(2), false);
    // Not durable yet: nothing is sent.
    expect(sent).toEqual([]);
    feed.listener('', record(3), true);
    await feed.settle();
    expect(sent).toEqual([1, 2, 3]);
    expect(feed.syncs).toBe(0);
    expect(feed.durableSeq).toBe(3);
    await feed.close();
  });

  it('syncs a burst with no durable record once, after the group-commit delay', async () => {
    const sent: number[] = [];
    const feed = new DurableFeed(file, (r) => sent.push(r.seq));
    feed.listener('', record(1), false);
    feed.listener('', record(2), false);
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
    const feed = new DurableFeed(file, (r) => sent.push(r.seq));
    feed.listener('', record(1), false);
    await feed.settle();
    expect(sent).toEqual([1]);
    expect(feed.syncs).toBe(1);
    feed.listener('', record(2), false);
    feed.listener('', record(3), true);
    feed.listener('', record(4), false);
    await feed.settle();
    expect(sent).toEqual([1, 2, 3, 4]);
    // 2 and 3 rode on 3's own fsync; 4 needed the feed's.
    expect(feed.syncs).toBe(2);
    await feed.close();
  });
});
