// The file-tool container's image (engine/agent/agent-tool-setup.ts toolSpecs): it holds every
// mount, withheld ones included, so it is always cfh's own sandbox image, whatever image the
// profile names; the workload container keeps the profile's image. Pure planning: no engine.
import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CfhEnvironment } from '../../src/config/env.js';
import { toolSpecs } from '../../src/engine/agent/agent-tool-setup.js';
import { planSandboxRun } from '../../src/engine/run/run-plan.js';
import { resolveImage } from '../../src/image/source.js';
import { makeTempDir, removeTempDir } from './helpers.js';
import { testEnvironment } from './test-environment.js';

let tmp = '';

beforeEach(async () => {
  tmp = realpathSync(await makeTempDir('cfh-file-tool-image-'));
  await mkdir(path.join(tmp, 'ws'));
});

afterEach(async () => {
  await removeTempDir(tmp);
});

function env(): CfhEnvironment {
  return testEnvironment(tmp);
}

async function planWith(image: string, tools: string[], workspace = 'ro') {
  const profile = path.join(tmp, 'profile.yaml');
  const lines = [
    'extends: default',
    `image: ${image}`,
    `tools: [${tools.join(', ')}]`,
    `workspace:\n  mode: ${workspace}`,
  ];
  await writeFile(profile, `${lines.join('\n')}\n`);
  return planSandboxRun(
    { workspace: path.join(tmp, 'ws'), command: ['true'], profile },
    env(),
    { uid: 1000, gid: 1000 },
    { pid: 4242, start: 'boot/1', host: 'test-host' },
  );
}

const SANDBOX = resolveImage('builtin:sandbox', { baseDir: '/' }).ref;

describe("the file-tool container's image", () => {
  it("is cfh's sandbox image whatever the workload's image, direct and draft", async () => {
    for (const workspace of ['ro', 'draft']) {
      const plan = await planWith('team/dev-image:latest', ['read_file', 'exec'], workspace);
      const specs = toolSpecs(plan);
      expect(specs.workload.image).toBe('team/dev-image:latest');
      expect(specs['file-tool'].image).toBe(SANDBOX);
      expect(specs['file-tool'].image).not.toBe(plan.spec.image);
      // Only the image differs: the file tools still see every mount of the run.
      expect(specs['file-tool'].mounts.map((m) => m.target)).toEqual(
        plan.spec.mounts.map((m) => m.target),
      );
    }
  });

  it('preflight asks for it only when the profile names a file tool', async () => {
    expect((await planWith('team/dev-image:latest', ['read_file'])).image.fileToolsUsed).toBe(true);
    expect((await planWith('team/dev-image:latest', ['exec'])).image.fileToolsUsed).toBe(false);
  });
});
