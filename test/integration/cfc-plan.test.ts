// CFC planning through the real CLI and engine (AH-CFC-3/10/14/15): every run records its
// mode and plan in snapshot.cfc, command runs too; observe is reduced assurance and, chosen
// over a profile's enforce mode, a recorded fallback; enforce-strict refuses an unlabelled
// source before anything exists; a withheld mount is absent from exec's container and still
// readable by the file tools; the direct command is captured (prompt_captured).
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  agentRunArgs,
  cfh,
  objectsOwnedBy,
  onlyRunDir,
  readEvents,
  readJson,
  startCfh,
  toolResults,
  useScratch,
} from './helpers.js';

const scratch = useScratch('cfc-plan');

interface SnapshotCfc {
  mode: string;
  modeSource: string;
  fallback: { from: string; to: string; owner: string; retireWhen: string } | null;
  mounts: {
    target: string;
    label: { confidentiality: string[] } | null;
    inWorkload: boolean;
    withheldBecause?: string;
  }[];
  unlabelled: string[];
  promptCapture: string | null;
}

interface Snapshot {
  cfc: SnapshotCfc;
  assurance: { level: string; reasons: { code: string; detail: string }[] };
}

/** A directory holding `x` (readable by the sandbox user) to mount at /secrets. */
async function secretsDir(name: string): Promise<string> {
  const dir = scratch.path(name);
  await mkdir(dir, { mode: 0o755 });
  await writeFile(path.join(dir, 'x'), 'the secret\n', { mode: 0o644 });
  return dir;
}

async function profileWith(name: string, body: string): Promise<string> {
  return scratch.file(`${name}.yaml`, `extends: untrusted-repo\nname: ${name}\n${body}`);
}

describe('snapshot.cfc', () => {
  it('a command run records its mode and plan; --cfc observe over enforce is a fallback', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = await secretsDir('secrets-cmd');
    const profile = await profileWith(
      'cfc-cmd',
      `cfc: { mode: enforce-explicit }\nmounts:\n  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }\n`,
    );
    const root = scratch.path('art-cmd');
    const run = await cfh([
      'sandbox',
      'run',
      '--profile',
      profile,
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--cfc',
      'observe',
      '--',
      'true',
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    const snap = await readJson<Snapshot>(path.join(await onlyRunDir(root), 'snapshot.json'));
    expect(snap.cfc).toMatchObject({
      mode: 'observe',
      modeSource: 'flag',
      fallback: {
        from: 'enforce-explicit',
        to: 'observe',
        owner: 'the operator (profile cfc.mode / --cfc)',
        retireWhen: 'set an enforce mode',
      },
      // The built-in workspace is labelled repo:untrusted (profiles/default.yaml).
      unlabelled: [],
      // A command run has no model and no captured prompt.
      promptCapture: null,
    });
    // Observe withholds nothing: only enforce modes keep a mount out of the workload.
    expect(snap.cfc.mounts).toEqual([
      expect.objectContaining({
        target: '/workspace',
        label: { confidentiality: [], integrity: ['repo:untrusted'] },
        inWorkload: true,
      }),
      expect.objectContaining({
        target: '/secrets',
        label: { confidentiality: ['secret'], integrity: [] },
        inWorkload: true,
      }),
    ]);
    // AH-CFC-15: observe is never enforcement: reduced assurance, said so.
    expect(snap.assurance.level).toBe('reduced');
    expect(snap.assurance.reasons).toContainEqual({
      code: 'cfc-observe',
      detail: 'CFC observe records would-be denials and enforces nothing',
    });
    // No flow events in a command run (the caller's own command); what it may write into
    // its writable workspace is recorded (cfc/written-labels.ts).
    const types = (await readEvents(await onlyRunDir(root))).map((e) => e.type);
    expect(types.filter((t) => t.startsWith('cfc_') || t === 'prompt_captured')).toEqual([
      'cfc_written',
    ]);
  });

  it('a default run records cfc disabled, with no fallback and no reduced reason', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-default');
    const run = await cfh([
      'sandbox',
      'run',
      '--profile',
      'untrusted-repo',
      '--workspace',
      repo,
      '--artifact-root',
      root,
      '--',
      'true',
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    const snap = await readJson<Snapshot>(path.join(await onlyRunDir(root), 'snapshot.json'));
    expect(snap.cfc).toMatchObject({ mode: 'disabled', modeSource: 'default', fallback: null });
    expect(snap.assurance.reasons.map((r) => r.code)).not.toContain('cfc-observe');
  });
});

describe('withheld mounts (AH-CFC-10)', () => {
  it('enforce-explicit: exec cannot see /secrets, read_file can; the prompt is captured', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = await secretsDir('secrets-agent');
    const profile = await profileWith(
      'cfc-withheld',
      `cfc: { mode: enforce-explicit }\nmounts:\n  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }\n`,
    );
    const script = await scratch.file(
      'withheld.yaml',
      [
        'turns:',
        '  - tool_calls:',
        '      - { name: exec, input: { command: [cat, /secrets/x] } }',
        '  - tool_calls:',
        '      - { name: read_file, input: { path: /secrets/x } }',
        '  - text: done',
        '',
      ].join('\n'),
    );
    const root = scratch.path('art-withheld');
    const prompt = 'read the secret';
    const run = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, script, prompt }),
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const snap = await readJson<Snapshot>(path.join(dir, 'snapshot.json'));
    const withheld = snap.cfc.mounts.find((m) => m.target === '/secrets');
    expect(withheld).toMatchObject({ inWorkload: false });
    // The rw workspace is the sink exec could carry the secret to.
    expect(withheld?.withheldBecause).toContain('/workspace (rw)');
    expect(snap.cfc.promptCapture).toBe('capture-1');

    const results = await toolResults(dir);
    expect(results).toHaveLength(2);
    const [exec, read] = results;
    expect(exec?.observation.status).toBe('error');
    expect(JSON.stringify(exec?.observation)).toMatch(/No such file or directory/);
    expect(read?.observation.status).toBe('success');

    const events = await readEvents(dir);
    const captured = events.find((e) => e.type === 'prompt_captured');
    expect(captured?.data).toMatchObject({
      captureId: 'capture-1',
      kernel: 'cfh',
      surface: 'cli',
      slot: 'prompt',
      chars: prompt.length,
      subject: { uid: process.getuid?.(), vouched: false },
    });
    // Captured before the first model request.
    const at = events.findIndex((e) => e.type === 'prompt_captured');
    const first = events.findIndex((e) => e.type === 'model_call_started');
    expect(first).toBeGreaterThan(-1);
    expect(at).toBeLessThan(first);
  });
});

describe('enforce-strict refusal (AH-CFC-14)', () => {
  it('refuses an unlabelled source with 125, before anything exists', async () => {
    const repo = await scratch.sampleRepo();
    const data = await secretsDir('data-strict');
    const profile = await profileWith(
      'cfc-strict',
      `cfc: { mode: enforce-strict }\nworkspace: { mode: rw, label: { integrity: [repo] } }\nmounts:\n  - { source: ${data}, target: /data }\n`,
    );
    const root = scratch.path('art-strict');
    const child = startCfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, prompt: 'p' }, [
        '--provider',
        'scripted',
      ]),
    );
    const result = await child;
    expect(result.exitCode).toBe(125);
    expect(result.stderr).toMatch(/^cfh: cfc enforce-strict: no label for mount \/data; /m);
    expect(result.stderr).toContain('--label TARGET=ATOM');
    await expect(readdir(root)).rejects.toThrow();
    expect(await objectsOwnedBy(child.pid ?? -1)).toEqual([]);

    // The fix the message names works: --label the mount and the run is planned.
    const fixed = await cfh(
      agentRunArgs({ workspace: repo, artifactRoot: root, profile, prompt: 'p' }, [
        '--label',
        '/data=i:data',
      ]),
    );
    expect(fixed.exitCode, fixed.stderr).toBe(0);
  });

  it('a --label naming no mount and a bad --cfc are refused naming the flag', async () => {
    const repo = await scratch.sampleRepo();
    const root = scratch.path('art-bad');
    const base = ['sandbox', 'run', '--workspace', repo, '--artifact-root', root];
    const label = await cfh([...base, '--label', '/nowhere=secret', '--', 'true']);
    expect(label.exitCode).toBe(125);
    expect(label.stderr).toMatch(/^cfh: --label \/nowhere: no mount has that target .*; /m);
    const mode = await cfh([...base, '--cfc', 'enforce', '--', 'true']);
    expect(mode.exitCode).toBe(125);
    expect(mode.stderr).toMatch(/^cfh: --cfc: 'enforce' is not a CFC mode; give one of /m);
    await expect(readdir(root)).rejects.toThrow();
  });
});

describe('what cfh says of CFC before a run', () => {
  it('profiles show --resolved shows the plan; capabilities the modes and the profile mode', async () => {
    const repo = await scratch.sampleRepo();
    const secrets = await secretsDir('secrets-show');
    const profile = await profileWith(
      'cfc-show',
      `cfc: { mode: enforce-strict }\nmounts:\n  - { source: ${secrets}, target: /secrets, label: { confidentiality: [secret] } }\n`,
    );
    // Shown, not run: enforce-strict's refusal would not be raised either way.
    const show = await cfh(['profiles', 'show', profile, '--resolved', '--workspace', repo]);
    expect(show.exitCode, show.stderr).toBe(0);
    const shown = JSON.parse(show.stdout) as { cfc: SnapshotCfc; profile: { cfc: unknown } };
    expect(shown.profile.cfc).toMatchObject({ mode: 'enforce-strict' });
    expect(shown.cfc.unlabelled).toEqual([]);
    expect(shown.cfc.mounts.find((m) => m.target === '/secrets')).toMatchObject({
      inWorkload: false,
    });
    const caps = await cfh(['capabilities', '--profile', profile, '--json']);
    expect(caps.exitCode, caps.stderr).toBe(0);
    expect((JSON.parse(caps.stdout) as { cfc: unknown }).cfc).toMatchObject({
      modes: {
        supported: ['disabled', 'observe', 'enforce-explicit', 'enforce-strict'],
        default: 'disabled',
      },
      profileMode: 'enforce-strict',
      trustedComponent: 'cfh',
    });
  });
});
