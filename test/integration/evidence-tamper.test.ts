// Adversarial: the evidence of a run is tamper-evident as a whole (AH-ART-1, AH-LIFE-2),
// not only events.jsonl. Each case copies a real run directory (a command run and a
// scripted agent run), changes one thing as an attacker with write access to it would, and
// requires `cfh runs show` to say BROKEN with the place and exit 1; the untouched copy
// verifies. What cannot be proved without a signature is said as "not verified".
import { beforeAll, describe, expect, it } from 'vitest';
import { appendFile, cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { agentRunArgs, cfh, onlyRunDir, runIdOf, useScratch } from './helpers.js';
import { hashEvent } from '../../src/evidence/event-log.js';

const scratch = useScratch('tamper');
let commandRun: string;
let agentRun: string;
let copies = 0;

beforeAll(async () => {
  const ws = await scratch.sampleRepo();
  const art = scratch.path('art-command');
  const r = await cfh(['sandbox', 'run', '--workspace', ws, '--artifact-root', art, '--', 'ls']);
  expect(r.exitCode, r.stderr).toBe(0);
  commandRun = await onlyRunDir(art);
  const artAgent = scratch.path('art-agent');
  const a = await cfh(
    agentRunArgs({
      workspace: ws,
      artifactRoot: artAgent,
      script: path.join(process.cwd(), 'examples', 'agent', 'fix-and-test.yaml'),
    }),
  );
  expect(a.exitCode, a.stderr).toBe(0);
  agentRun = await onlyRunDir(artAgent);
});

/** A copy of a run directory under its own artifact root; returns [root, dir]. */
async function copyOf(run: string): Promise<[string, string]> {
  const root = scratch.path(`copy-${copies++}`);
  const dir = path.join(root, path.basename(run));
  await cp(run, dir, { recursive: true });
  return [root, dir];
}

async function show(root: string, dir: string) {
  return cfh(['runs', 'show', '--artifact-root', root, runIdOf(dir)]);
}

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
}

const edit = async (file: string, change: (text: string) => string): Promise<void> => {
  await writeFile(file, change(await readFile(file, 'utf8')));
};

describe('cfh runs show verifies the whole run directory', () => {
  it('an untouched run verifies, and says what it cannot prove', async () => {
    for (const run of [commandRun, agentRun]) {
      const [root, dir] = await copyOf(run);
      const r = await show(root, dir);
      expect(r.exitCode, r.stdout).toBe(0);
      expect(r.stdout).toMatch(/evidence\s+verified/);
      expect(r.stdout).toMatch(
        /verified\s+integrity\.anchor: state\.json and report\.json anchored to run_finished/,
      );
      expect(r.stdout).toMatch(/not verified integrity\.signature: unsigned/);
    }
  });

  const cases: [string, () => string, (dir: string) => Promise<void>, RegExp][] = [
    [
      'an edited snapshot.json',
      () => commandRun,
      (d) => edit(path.join(d, 'snapshot.json'), (t) => t.replace('"default"', '"trusted"')),
      /snapshot\.json: digest differs/,
    ],
    [
      'an edited seccomp.json',
      () => commandRun,
      (d) =>
        edit(path.join(d, 'seccomp.json'), (t) => t.replace('SCMP_ACT_ERRNO', 'SCMP_ACT_ALLOW')),
      /seccomp\.json: digest differs/,
    ],
    [
      'an edited output',
      () => commandRun,
      (d) => appendFile(path.join(d, 'outputs', 'stdout'), 'forged line\n'),
      // Grown past its recorded size: not read at all (run-reader.ts).
      /outputs\/stdout: \d+ bytes, more than the \d+ it may hold; not read/,
    ],
    [
      'an edited report.json',
      () => commandRun,
      (d) => edit(path.join(d, 'report.json'), (t) => t.replace('"completed"', '"failed"')),
      /report\.json: says failed/,
    ],
    [
      'a removed report.json',
      () => commandRun,
      (d) => rm(path.join(d, 'report.json')),
      /report\.json: missing/,
    ],
    [
      'a file nobody recorded',
      () => commandRun,
      (d) => writeFile(path.join(d, 'outputs', 'call-9999.stdout'), 'planted'),
      /call-9999\.stdout: in the directory, but no record/,
    ],
    [
      'an edited transcript',
      () => agentRun,
      (d) => edit(path.join(d, 'transcript.jsonl'), (t) => t.replace('direct-command', 'context')),
      /transcript\.jsonl: digest differs/,
    ],
    [
      "an edited tool call's output",
      () => agentRun,
      (d) => appendFile(path.join(d, 'outputs', 'call-0001.stdout'), 'x'),
      /outputs\/call-0001\.stdout: \d+ bytes, more than the \d+ it may hold; not read/,
    ],
    [
      'the tail cut off, state.json re-anchored to the new last event',
      () => commandRun,
      async (d) => {
        const events = await lines(path.join(d, 'events.jsonl'));
        const kept = events.slice(0, -3);
        await writeFile(path.join(d, 'events.jsonl'), `${kept.join('\n')}\n`);
        const last = JSON.parse(kept.at(-1) ?? '{}') as { seq: number; hash: string };
        await edit(path.join(d, 'state.json'), (t) => {
          const s = JSON.parse(t) as Record<string, unknown>;
          return JSON.stringify({ ...s, lastEvent: { seq: last.seq, hash: last.hash } });
        });
      },
      /state\.json says completed but the log has no run_finished/,
    ],
    [
      'an event appended after run_finished, chained correctly',
      () => commandRun,
      async (d) => {
        const events = await lines(path.join(d, 'events.jsonl'));
        const last = JSON.parse(events.at(-1) ?? '{}') as Record<string, unknown>;
        const base = {
          seq: Number(last.seq) + 1,
          ts: new Date().toISOString(),
          runId: String(last.runId),
          type: 'container_exited',
          data: { exitCode: 0 },
          prevHash: String(last.hash),
        };
        await appendFile(
          path.join(d, 'events.jsonl'),
          `${JSON.stringify({ ...base, hash: hashEvent(base) })}\n`,
        );
      },
      /events follow run_finished/,
    ],
    [
      'an event edited and the chain re-hashed from there',
      () => commandRun,
      async (d) => {
        // Rewrite the whole chain after changing one event: the chain holds, the anchors
        // in state.json and report.json do not.
        const events = (await lines(path.join(d, 'events.jsonl'))).map(
          (l) => JSON.parse(l) as Record<string, any>,
        );
        let prev = '0'.repeat(64);
        const out: string[] = [];
        for (const e of events) {
          const rest: Record<string, any> = { ...e };
          delete rest.hash;
          if (e.type === 'container_exited')
            rest.data = { ...rest.data, exitCode: 0, forged: true };
          rest.prevHash = prev;
          const hash = hashEvent(rest as Parameters<typeof hashEvent>[0]);
          out.push(JSON.stringify({ ...rest, hash }));
          prev = hash;
        }
        await writeFile(path.join(d, 'events.jsonl'), `${out.join('\n')}\n`);
      },
      /state\.json: lastEvent does not cite run_finished/,
    ],
  ];

  it.each(cases)('%s: BROKEN, with the place, exit 1', async (_name, run, tamper, message) => {
    const [root, dir] = await copyOf(run());
    await tamper(dir);
    const r = await show(root, dir);
    expect(r.exitCode, r.stdout).toBe(1);
    expect(r.stdout).toMatch(/evidence\s+BROKEN/);
    expect(r.stdout).toMatch(message);
  });

  it('digests in the log are those of the bytes on disk', async () => {
    const events = (await lines(path.join(commandRun, 'events.jsonl'))).map(
      (l) => JSON.parse(l) as { type: string; data: { file: string; sha256: string } },
    );
    const artifacts = events.filter((e) => e.type === 'artifact_written');
    expect(artifacts.map((e) => e.data.file).sort()).toEqual(
      // hosts: the /etc/hosts of a run without network (localhost), mounted from here.
      ['hosts', 'outputs/stderr', 'outputs/stdout', 'seccomp.json', 'snapshot.json'].sort(),
    );
    for (const a of artifacts) {
      const body = await readFile(path.join(commandRun, a.data.file));
      expect(createHash('sha256').update(body).digest('hex')).toBe(a.data.sha256);
    }
  });
});
