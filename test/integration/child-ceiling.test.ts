// AH-CFC-12a through every labelled channel into a child: a child's confidentiality ceiling
// holds its workspace, each mount, each network destination and each host tool's results
// (an unlabelled one included) at the parent's plan, before anything exists; and the task
// and inputs the parent hands over carry the parent's influence, so a delegate call made
// after the parent saw a value above the ceiling is refused under the flow rule and no
// child starts. (A value handle naming the value is refused as an argument too:
// integration/children.test.ts "never lets a value handle cross into a child".)
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, childRuns, delegate, ofType } from './children-support.js';
import { agentRunArgs, cfh, useScratch } from './helpers.js';

const scratch = useScratch('child-ceiling');
const { file, parentRun, path: scratchPath } = childRuns(scratch);

const base = { extends: 'default', name: 'parent', tools: ['read_file', 'list_dir'] };
let secrets: string;

beforeAll(async () => {
  secrets = scratch.path('secrets');
  await mkdir(secrets);
  await writeFile(path.join(secrets, 'x'), 'the secret\n');
  await chmod(secrets, 0o755);
});

/** A parent whose one child `kid` has ceiling [internal] and the given layer. */
async function planWithChild(layer: () => Record<string, unknown>) {
  const kid = layer();
  const root = scratchPath('art');
  const profile = {
    ...base,
    children: {
      kid: {
        description: 'a child',
        tools: ['read_file'],
        ceiling: { confidentiality: ['internal'] },
        ...kid,
      },
    },
  };
  const result = await cfh(
    agentRunArgs({
      workspace: await scratch.sampleRepo(),
      artifactRoot: root,
      profile: await file('parent.yaml', profile),
      script: await file('script.yaml', { turns: [{ text: 'x' }] }),
    }),
  );
  return { result, created: existsSync(root) };
}

const SECRET = { confidentiality: ['secret'] };

describe("a child's ceiling over every labelled source it names, at the parent's plan (AH-CFC-12a)", () => {
  const hostTool = (label?: object) => ({
    hostTools: [
      {
        name: 'peek',
        kind: 'exec',
        argv: ['/bin/true'],
        riskClass: 'read_only',
        sideEffectClass: 'none',
        ...(label === undefined ? {} : { resultLabel: label }),
      },
    ],
  });
  const destination = (label: object) => ({
    network: { mode: 'allowlist', allow: ['127.0.0.1'], labels: { '127.0.0.1': label } },
  });
  it.each([
    ['its workspace', () => ({ workspace: { mode: 'ro', label: SECRET } }), 'the workspace'],
    [
      'a mount',
      () => ({ mounts: [{ source: secrets, target: '/data', label: SECRET }] }),
      'mount /data',
    ],
    ['a network destination', () => destination(SECRET), 'destination 127.0.0.1'],
    ["a host tool's results", () => hostTool(SECRET), 'host tool peek'],
    ["an unlabelled host tool's results", () => hostTool(), 'host tool peek'],
  ])('%s above the ceiling: refused with 125 before anything exists', async (_, kid, source) => {
    const { result, created } = await planWithChild(kid);
    expect(result.exitCode, result.stderr).toBe(125);
    expect(result.stderr).toContain(`child kid: ${source} is labelled [`);
    expect(result.stderr).toContain("above the child's ceiling [internal]");
    expect(created).toBe(false);
  });

  it('the same sources within the ceiling: the plan is accepted', async () => {
    const within = { confidentiality: ['internal'] };
    const { result } = await planWithChild(() => ({
      workspace: { mode: 'ro', label: within },
      mounts: [{ source: secrets, target: '/data', label: within }],
      ...destination(within),
      ...hostTool(within),
    }));
    expect(result.exitCode, result.stderr).toBe(0);
  });
});

describe('the task carries the parent influence into the child (AH-CFC-12a)', () => {
  const profile = {
    ...base,
    cfc: { mode: 'enforce-explicit', modelClearance: ['secret'] },
    workspace: { mode: 'ro', label: { integrity: ['repo:untrusted'] } },
    children: {
      kid: {
        description: 'lists',
        tools: ['list_dir'],
        ceiling: { confidentiality: [] },
        budgets: { maxModelTurns: 2 },
      },
    },
  };
  const children = { kid: { turns: [{ text: 'listed' }] } };

  it('after the parent saw a value above the ceiling, the delegate call is refused and no child starts', async () => {
    const withSecret = {
      ...profile,
      mounts: [{ source: secrets, target: '/secrets', label: SECRET }],
    };
    const script = {
      turns: [
        { tool_calls: [call('read_file', { path: '/secrets/x' })] },
        { tool_calls: [delegate('kid', 'list the files')] },
        { text: 'done' },
      ],
      children,
    };
    const { result, dir, events } = await parentRun(withSecret, script, {
      extra: ['--non-interactive'],
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const flow = ofType(events, 'cfc_flow').find((e) => e.data['tool'] === 'delegate');
    expect(flow?.data).toMatchObject({ verdict: 'deny' });
    expect(JSON.stringify(flow?.data['influence'])).toContain('secret');
    const decision = ofType(events, 'permission_decision').find(
      (e) => e.data['tool_name'] === 'delegate',
    );
    expect(decision?.data).toMatchObject({
      decision: 'approval_required',
      policy_rule: 'cfc:clearance',
    });
    expect(ofType(events, 'child_started')).toEqual([]);
    expect(existsSync(path.join(dir, 'children'))).toBe(false);
  }, 120_000);

  it('the same delegation from a parent that saw nothing above it: the child runs', async () => {
    const script = {
      turns: [
        { tool_calls: [call('list_dir', { path: '.' })] },
        { tool_calls: [delegate('kid', 'list the files')] },
        { text: 'done' },
      ],
      children,
    };
    const { result, events } = await parentRun(profile, script, { extra: ['--non-interactive'] });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(ofType(events, 'child_finished')).toHaveLength(1);
  }, 120_000);
});
