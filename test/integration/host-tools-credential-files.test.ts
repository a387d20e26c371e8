// A host tool's `fromFile` credential must lie where no sandbox of the run can read it
// (AH-TOOL-7: credentials never enter an untrusted execution substrate). Found by our
// adversarial round: a token in the workspace (a repository's `.ci/token`) or under any
// `--mount` source was read by the model's exec and left rot13'd, an encoding no scrubber
// knows. The class: a credential file inside any mount (ro ones too), or with another name
// on such a mount's file system. Refused at planning, before anything starts (125).
import { link, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentRunArgs, cfh, ownBySandbox, useScratch } from './helpers.js';
import { profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('cred-files');
const TOKEN = `adv-token-${process.pid}-Zq81xK`;

/** A profile with a harmless host tool holding TOKEN from `file`, and `exec`. */
async function credentialProfile(name: string, file: string): Promise<string> {
  return profileFile(scratch, name, {
    tools: ['exec'], // host tools join the surface of the profile that declares them
    hostTools: [
      {
        name,
        kind: 'exec',
        argv: ['/bin/true'],
        env: { TOKEN: { fromFile: file } },
        riskClass: 'read_only',
        sideEffectClass: 'none',
        resourceScope: 'project',
      },
    ],
  });
}

/** The model has the sandbox print the file rot13'd: no spelling a scrubber looks for. */
async function readBack(name: string, inSandbox: string): Promise<string> {
  return scriptFile(scratch, name, [
    [{ name: 'exec', input: { command: ['sh', '-c', `tr A-Za-z N-ZA-Mn-za-m < ${inSandbox}`] } }],
  ]);
}

describe('a host-tool credential file a sandbox could read', () => {
  it('a fromFile inside the workspace is refused before anything starts', async () => {
    const ws = await scratch.sampleRepo();
    await mkdir(path.join(ws, '.ci'));
    await writeFile(path.join(ws, '.ci', 'token'), `${TOKEN}\n`);
    await ownBySandbox(path.join(ws, '.ci'));
    await ownBySandbox(path.join(ws, '.ci', 'token'));
    const r = await cfh(
      agentRunArgs({
        workspace: ws,
        artifactRoot: scratch.path('runs-ws'),
        profile: await credentialProfile('inws', path.join(ws, '.ci', 'token')),
        script: await readBack('inws', '/workspace/.ci/token'),
      }),
    );
    // Before: exit 0, and the rot13 of the token was in the model's observation.
    expect(r.exitCode, r.stdout + r.stderr).toBe(125);
    expect(r.stderr).toMatch(
      /^cfh: hostTools \w+: env TOKEN \(fromFile\) .*can read: the credential would reach the container; /m,
    );
    expect(r.stderr).not.toContain(TOKEN);
  }, 120_000);

  it('variant: a fromFile under an extra --mount source is refused too', async () => {
    const ws = await scratch.sampleRepo();
    const secrets = scratch.path('secrets');
    await mkdir(secrets);
    await writeFile(path.join(secrets, 'tok'), `${TOKEN}\n`);
    await ownBySandbox(path.join(secrets, 'tok'));
    const r = await cfh(
      agentRunArgs(
        {
          workspace: ws,
          artifactRoot: scratch.path('runs-mount'),
          profile: await credentialProfile('inmount', path.join(secrets, 'tok')),
          script: await readBack('inmount', '/data/tok'),
        },
        ['--mount', `${secrets}:/data:ro`],
      ),
    );
    expect(r.exitCode, r.stdout + r.stderr).toBe(125);
    expect(r.stderr).toMatch(
      /^cfh: hostTools \w+: env TOKEN \(fromFile\) .*can read: the credential would reach the container; /m,
    );
    expect(r.stderr).not.toContain(TOKEN);
  }, 120_000);

  it('variant: a credential file with a second name inside the workspace is refused', async () => {
    const ws = await scratch.sampleRepo();
    const secrets = scratch.path('linked-secrets');
    await mkdir(secrets);
    await writeFile(path.join(secrets, 'tok'), `${TOKEN}\n`);
    await link(path.join(secrets, 'tok'), path.join(ws, 'innocent.txt'));
    await ownBySandbox(path.join(secrets, 'tok'));
    const r = await cfh(
      agentRunArgs({
        workspace: ws,
        artifactRoot: scratch.path('runs-link'),
        profile: await credentialProfile('linked', path.join(secrets, 'tok')),
        script: await readBack('linked', '/workspace/innocent.txt'),
      }),
    );
    expect(r.exitCode, r.stdout + r.stderr).toBe(125);
    expect(r.stderr).toMatch(
      /^cfh: hostTools linked: env TOKEN \(fromFile\) .* has 2 names on the file system of /m,
    );
    expect(r.stderr).not.toContain(TOKEN);
  }, 120_000);

  it('a credential file outside every mount still works', async () => {
    const ws = await scratch.sampleRepo();
    const secrets = scratch.path('outside-secrets');
    await mkdir(secrets);
    await writeFile(path.join(secrets, 'tok'), `${TOKEN}\n`);
    const r = await cfh(
      agentRunArgs({
        workspace: ws,
        artifactRoot: scratch.path('runs-outside'),
        profile: await credentialProfile('outside', path.join(secrets, 'tok')),
        script: await scriptFile(scratch, 'outside', [
          [{ name: 'exec', input: { command: ['true'] } }],
        ]),
      }),
    );
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
  }, 120_000);
});
