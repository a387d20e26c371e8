// What the call-stopping tests share (class 7 of the security round: cancellation stops the
// work, not only the stream): an exec command that writes into the workspace after a delay
// twice, once from its own process tree and once from a daemon (double fork, setsid, its
// environment cleared, its stdio detached); a look at the processes of a container through
// the engine; and what the evidence must say of a stopped call.
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { cfh, docker, type Event } from './helpers.js';

/** Seconds before the late writes; a test waits well past them. */
export const DELAY_S = 3;

let tags = 0;

/** A late-writing command whose processes carry `sleep <marker>` in their argv. */
export interface LateWrites {
  readonly argv: string[];
  /** The `sleep` argument only this command's processes carry. */
  readonly marker: string;
  /** The files it would write, relative to the workspace. */
  readonly files: readonly string[];
}

export function lateWrites(): LateWrites {
  tags += 1;
  const marker = `${DELAY_S}.${String(tags).padStart(3, '0')}${process.pid % 1000}`;
  const tag = `late-${tags}`;
  const daemon = `sleep ${marker}; echo daemon > /workspace/${tag}-daemon`;
  return {
    argv: [
      'sh',
      '-c',
      `(setsid env -i /bin/sh -c '${daemon}' </dev/null >/dev/null 2>&1 &); ` +
        `sleep ${marker}; echo direct > /workspace/${tag}-direct; sleep 60`,
    ],
    marker,
    files: [`${tag}-daemon`, `${tag}-direct`],
  };
}

/** The command line of every process in `container`, as the engine's exec sees them. */
export async function processesIn(container: string): Promise<string[]> {
  const exec = await docker.getContainer(container).exec({
    Cmd: ['sh', '-c', 'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done'],
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  // The engine frames stdout/stderr; the frame headers never hold a printable line.
  return Buffer.concat(chunks)
    .toString('latin1')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** Waits until `count` processes carrying the marker run in `container`. */
export async function waitForMarker(container: string, marker: string, count = 2): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const found = (await processesIn(container).catch(() => [])).filter((l) =>
      l.includes(`sleep ${marker}`),
    );
    if (found.length >= count) return;
    if (Date.now() > deadline) throw new Error(`${marker} not running in ${container}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The lines of `container`'s processes that carry the marker (none once it was stopped). */
export async function markerProcesses(container: string, marker: string): Promise<string[]> {
  return (await processesIn(container)).filter((l) => l.includes(marker));
}

/** Waits until `at + DELAY_S + 3 s`, then says which of the late files landed. */
export async function landedAfterDelay(
  workspace: string,
  late: LateWrites,
  at: number,
): Promise<string[]> {
  const wait = at + (DELAY_S + 3) * 1000 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const landed: string[] = [];
  for (const f of late.files)
    if (
      await stat(path.join(workspace, f)).then(
        () => true,
        () => false,
      )
    )
      landed.push(f);
  return landed;
}

/**
 * The call's stop is in the evidence, before its result: its session killed, nothing left.
 * Returns the stop event.
 */
export function expectStopBeforeResult(
  events: readonly Event[],
  callId: string,
  reason: 'cancelled' | 'timeout',
  resultType: 'tool_call_aborted' | 'tool_executed',
): Event {
  const stop = events.find((e) => e.type === 'tool_call_stopped' && e.data.callId === callId);
  expect(stop, `no tool_call_stopped for ${callId}`).toBeDefined();
  expect(stop?.data).toMatchObject({
    tool: 'exec',
    reason,
    method: 'session',
    gone: true,
  });
  // The command's sh and its sleep, the daemon's sh and its sleep: all of its session.
  expect(stop?.data.processes as number).toBeGreaterThanOrEqual(2);
  const result = events.find((e) => e.type === resultType && e.data.callId === callId);
  expect(result, `no ${resultType} for ${callId}`).toBeDefined();
  expect(stop?.seq ?? Infinity).toBeLessThan(result?.seq ?? -Infinity);
  return stop as Event;
}

/** `cfh audit` passes on the run, its check of stopped calls among the passes. */
export async function expectAudited(runDir: string): Promise<void> {
  const r = await cfh(['audit', runDir]);
  expect(r.stdout + r.stderr).toMatch(/ok: \d+ pass, 0 fail/);
  expect(r.stdout).toMatch(/^pass lifecycle\.calls-stopped /m);
  expect(r.exitCode).toBe(0);
}
