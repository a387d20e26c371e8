// What the openai-compatible route tests share (openai-gateway, openai-routes): a profile's
// `model` section for a stand-in endpoint, an agent run with the route's key in cfh's
// environment, the audit of a run (no fail, warn or inconclusive but the signature's) with
// the key nowhere in it, and the text the model was sent for one call's result.
import { expect } from 'vitest';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { OpenAiApiServer, WireRequest } from '../fixtures/openai-api-server.js';
import { agentRunArgs, cfh, onlyRunDir, readEvents, runIdOf, type Scratch } from './helpers.js';

export const KEY = 'sk-openai-route-key-never-recorded-51c2';
export const MODEL = 'qwen3-coder';

export type Wire = 'chat' | 'responses';
export const pathOf = (wire: Wire) => (wire === 'chat' ? '/v1/chat/completions' : '/v1/responses');

export function section(server: OpenAiApiServer, wire: Wire, extra: Record<string, unknown> = {}) {
  return {
    provider: 'openai-compatible',
    baseUrl: server.baseURL,
    model: MODEL,
    wire,
    credential: { fromEnv: 'OPENAI_API_KEY' },
    contextWindow: 32768,
    ...extra,
  };
}

/** The text the model was sent for one call's result, whichever the wire. */
export function resultFor(q: WireRequest | undefined, id: string): string | undefined {
  const body = q?.body ?? {};
  const chat = (
    body['messages'] as { role: string; tool_call_id?: string; content?: string }[] | undefined
  )?.find((m) => m.role === 'tool' && m.tool_call_id === id);
  if (chat !== undefined) return chat.content;
  const items =
    (body['input'] as { type?: string; call_id?: string; output?: string }[] | undefined) ?? [];
  return items.find((i) => i.type === 'function_call_output' && i.call_id === id)?.output;
}

/** Runs and their audit in one test file's scratch directory. */
export function openAiRuns(scratch: Scratch) {
  const profileFile = (name: string, body: Record<string, unknown>): Promise<string> =>
    scratch.file(`${name}.json`, JSON.stringify({ extends: 'default', name, ...body }));

  const run = async (name: string, profile: string | undefined, extra: string[] = [], env = {}) => {
    const root = scratch.path(`art-${name}`);
    const r = await cfh(
      agentRunArgs(
        {
          workspace: await scratch.sampleRepo(),
          artifactRoot: root,
          prompt: 'look around',
          ...(profile === undefined ? {} : { profile }),
        },
        extra,
      ),
      { env: { OPENAI_API_KEY: KEY, ...env } },
    );
    const dir = await onlyRunDir(root);
    return { r, dir, root, events: await readEvents(dir) };
  };

  /**
   * `cfh audit --json` of the run passes: no check fails or is inconclusive, and the only warn
   * is the signature's (the suite signs nothing). No file of the run holds the key.
   */
  const auditedAndClean = async (root: string, dir: string): Promise<Map<string, string>> => {
    const audit = await cfh(['audit', '--json', '--artifact-root', root, runIdOf(dir)]);
    expect(audit.exitCode, audit.stdout + audit.stderr).toBe(0);
    const { checks } = JSON.parse(audit.stdout) as { checks: { id: string; verdict: string }[] };
    const off = checks.filter(
      (c) => !['pass', 'not-applicable'].includes(c.verdict) && c.id !== 'integrity.signature',
    );
    expect(off, audit.stdout).toEqual([]);
    const files = await readdir(dir, { recursive: true });
    for (const f of files) {
      const text = await readFile(path.join(dir, f), 'utf8').catch(() => '');
      expect(text, f).not.toContain(KEY);
    }
    return new Map(checks.map((c) => [c.id, c.verdict]));
  };

  return { profileFile, run, auditedAndClean };
}
