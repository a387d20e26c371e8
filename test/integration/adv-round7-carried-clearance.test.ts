// Round 7, the class "a carried context above the receiving run's model clearance": the
// model provider is a sink (AH-CFC-5/7), and whatever a run continues or is handed (an
// approved plan, a resumed conversation, a prompt file from a tree an earlier run wrote a
// secret into) reaches it whole with the first request. Under an enforce mode such a run is
// refused before anything exists (context_uncleared, 125) and its model is never asked;
// observe lets it through, recorded. Each case fails without engine/cfc/carried-clearance.ts
// (the run starts and the secret is in what its model was sent).
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { agentRunArgs, cfh, readEvents, useScratch } from './helpers.js';

const scratch = useScratch('adv-round7-carried');
const SECRET = 'S3CRET-r7-c4rr13d';

async function setUp(name: string): Promise<{ ws: string; secrets: string; root: string }> {
  const ws = scratch.path(`${name}-ws`);
  const secrets = scratch.path(`${name}-secrets`);
  await mkdir(ws, { mode: 0o777 });
  await mkdir(secrets, { mode: 0o755 });
  await writeFile(path.join(ws, 'NOTES.md'), 'notes\n');
  // Written by the sandbox user in the deploy run (umask left the modes narrower).
  await chmod(path.join(ws, 'NOTES.md'), 0o666);
  await chmod(ws, 0o777);
  await writeFile(path.join(secrets, 'token'), SECRET, { mode: 0o644 });
  return { ws, secrets, root: scratch.path(`${name}-art`) };
}

function profile(name: string, secrets: string, cfc: Record<string, unknown>): Promise<string> {
  return scratch.file(
    `${name}.yaml`,
    stringify({
      extends: 'default',
      name,
      tools: ['read_file'],
      workspace: { mode: 'ro', label: { integrity: ['user'] } },
      mounts: [
        { source: secrets, target: '/secrets', mode: 'ro', label: { confidentiality: ['secret'] } },
      ],
      cfc,
    }),
  );
}

const script = (name: string, turns: unknown[]): Promise<string> =>
  scratch.file(`${name}-script.yaml`, stringify({ turns }));
const readSecret = { tool_calls: [{ name: 'read_file', input: { path: '/secrets/token' } }] };

async function runIds(root: string): Promise<string[]> {
  return (await readdir(root)).filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{8}$/.test(n)).sort();
}

describe('class: a carried context above the model clearance is refused, not sent', () => {
  it('an approved plan holding a secret is not executed by a model cleared for nothing', async () => {
    const { ws, secrets, root } = await setUp('plan');
    const planner = await profile('planner', secrets, {
      mode: 'enforce-explicit',
      modelClearance: ['secret'],
    });
    const planned = await cfh(
      agentRunArgs({ workspace: ws, artifactRoot: root, profile: planner }, [
        '--plan',
        '--non-interactive',
        '--script',
        await script('plan', [readSecret, { text: `Plan: the token is ${SECRET}` }]),
      ]),
    );
    expect(planned.exitCode, planned.stderr).toBe(0);
    const [planId] = await runIds(root);
    for (const mode of ['enforce-explicit', 'enforce-strict']) {
      const executor = await profile(`executor-${mode}`, secrets, { mode, modelClearance: [] });
      const r = await cfh(
        agentRunArgs({ workspace: ws, artifactRoot: root, profile: executor }, [
          '--from-plan',
          planId ?? '',
          '--non-interactive',
          '--script',
          await script(`exec-${mode}`, [{ text: 'ok' }]),
        ]),
      );
      expect(r.exitCode, r.stderr).toBe(125);
      expect(r.stderr).toMatch(
        /^cfh: the plan of run \S+ holds \[secret\], which this run's model is not cleared for \(cfc.modelClearance \[\]\); run it under a profile whose cfc.modelClearance includes secret\n$/,
      );
      // Refused before anything exists: no run directory beside the plan's.
      expect(await runIds(root)).toEqual([planId]);
    }
    // observe enforces nothing: the plan goes through, and the carried label is recorded.
    const observer = await profile('executor-observe', secrets, {
      mode: 'observe',
      modelClearance: [],
    });
    const seen = await cfh(
      agentRunArgs({ workspace: ws, artifactRoot: root, profile: observer }, [
        '--from-plan',
        planId ?? '',
        '--non-interactive',
        '--script',
        await script('exec-observe', [{ text: 'ok' }]),
      ]),
    );
    expect(seen.exitCode, seen.stderr).toBe(0);
    const observed = (await runIds(root)).find((id) => id !== planId) ?? '';
    const events = await readEvents(path.join(root, observed));
    expect(events.find((e) => e.type === 'cfc_carried')?.data).toMatchObject({
      kind: 'plan',
      label: { confidentiality: ['secret'] },
    });
  }, 240_000);

  it('a conversation resumed from observe into enforce is not sent to a model cleared for nothing', async () => {
    const { ws, secrets, root } = await setUp('resume');
    const p = await profile('resume', secrets, { mode: 'enforce-explicit', modelClearance: [] });
    const first = await cfh(
      agentRunArgs({ workspace: ws, artifactRoot: root, profile: p }, [
        '--cfc',
        'observe',
        '--non-interactive',
        '--script',
        await script('resume-1', [readSecret, { text: 'read it' }]),
      ]),
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const [firstId] = await runIds(root);
    const r = await cfh([
      'sandbox',
      'resume',
      firstId ?? '',
      '--artifact-root',
      root,
      '--cfc',
      'enforce-explicit',
      '--non-interactive',
      '--prompt',
      'go on',
      '--script',
      await script('resume-2', [{ text: 'resumed' }]),
    ]);
    expect(r.exitCode, r.stderr).toBe(125);
    expect(r.stderr).toContain(
      `cfh: the conversation of run ${firstId ?? ''} (resume) holds [secret], which this run's model is not cleared for`,
    );
    expect(await runIds(root)).toEqual([firstId]);
  }, 240_000);

  it('a --context or --quote file in a tree an earlier run wrote a secret into is not sent', async () => {
    const { ws, secrets, root } = await setUp('slot');
    const deploy = await scratch.file(
      'deploy.yaml',
      stringify({
        extends: 'default',
        name: 'deploy',
        workspace: { mode: 'rw', label: { integrity: ['user'] }, clearance: ['secret'] },
        mounts: [
          {
            source: secrets,
            target: '/secrets',
            mode: 'ro',
            label: { confidentiality: ['secret'] },
          },
        ],
        cfc: { mode: 'enforce-explicit', modelClearance: [] },
      }),
    );
    const wrote = await cfh([
      'sandbox',
      'run',
      '--profile',
      deploy,
      '--workspace',
      ws,
      '--artifact-root',
      root,
      '--',
      'sh',
      '-c',
      'echo "token: $(cat /secrets/token)" >> /workspace/NOTES.md',
    ]);
    expect(wrote.exitCode, wrote.stderr).toBe(0);
    const before = await runIds(root);
    const agent = await scratch.file(
      'agent.yaml',
      stringify({
        extends: 'default',
        name: 'agent',
        tools: ['read_file'],
        workspace: { mode: 'ro', label: { integrity: ['user'] } },
        cfc: { mode: 'enforce-explicit', modelClearance: [] },
      }),
    );
    const notes = path.join(ws, 'NOTES.md');
    for (const flag of ['--context', '--quote']) {
      const r = await cfh(
        agentRunArgs({ workspace: ws, artifactRoot: root, profile: agent }, [
          flag,
          notes,
          '--non-interactive',
          '--script',
          await script(`slot${flag}`, [{ text: 'done' }]),
        ]),
      );
      expect(r.exitCode, r.stderr).toBe(125);
      expect(r.stderr).toBe(
        `cfh: ${flag} '${notes}' holds [secret], which this run's model is not cleared for (cfc.modelClearance []); run it under a profile whose cfc.modelClearance includes secret, or leave the file out\n`,
      );
    }
    expect(await runIds(root)).toEqual(before);
    // A prompt file whose place holds nothing confidential is a slot as before.
    const plain = path.join(scratch.path('plain'), 'brief.md');
    await mkdir(path.dirname(plain), { recursive: true });
    await writeFile(plain, 'read the README\n');
    const ok = await cfh(
      agentRunArgs({ workspace: ws, artifactRoot: root, profile: agent }, [
        '--context',
        plain,
        '--non-interactive',
        '--script',
        await script('plain', [{ text: 'done' }]),
      ]),
    );
    expect(ok.exitCode, ok.stderr).toBe(0);
  }, 240_000);
});
