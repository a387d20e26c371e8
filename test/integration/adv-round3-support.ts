// What the round-3 adversarial tests (adv-round3-*.test.ts) share: a labelled secret in a
// directory of the test's own, profile files written into the scratch directory, an agent
// run driven by a scripted model (--script) or by the stand-in Messages API (a model that
// reads what it was shown, as a compromised one would), and the model's view of a run:
// every tool_result it was sent, with the run-salted names cfh minted (cfh-val:, cfh-ref:)
// written as placeholders, so two runs that differ only in the secret's value can be
// compared. An opaque observation answers no question: the model's view of a run must not
// depend on the value of a secret it was not cleared for.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { expect } from 'vitest';
import { agentRunArgs, cfh, onlyRunDir, type CfhResult, type Scratch } from './helpers.js';

export { NODE } from './host-tools-support.js';

let n = 0;
export const next = (): number => (n += 1);

/** A directory (0755) holding `files` (0644): a labelled secret source. */
export async function secretDir(scratch: Scratch, files: Record<string, string>): Promise<string> {
  const dir = scratch.path(`secrets-${next()}`);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  for (const [name, body] of Object.entries(files)) {
    await writeFile(path.join(dir, name), body, { mode: 0o644 });
    await chmod(path.join(dir, name), 0o644);
  }
  return dir;
}

/** A profile file extending `default` with `fields`, in the scratch directory. */
export async function profile(scratch: Scratch, fields: Record<string, unknown>): Promise<string> {
  const id = next();
  return scratch.file(
    `profile-${id}.yaml`,
    stringify({ extends: 'default', name: `adv3-${id}`, ...fields }),
  );
}

/** A scripted model: each turn's tool calls, then a final text. */
export async function script(
  scratch: Scratch,
  turns: readonly (readonly { name: string; input: unknown }[])[],
  answer = 'done',
): Promise<string> {
  return scratch.file(
    `script-${next()}.yaml`,
    stringify({ turns: [...turns.map((calls) => ({ tool_calls: calls })), { text: answer }] }),
  );
}

export interface Run {
  readonly r: CfhResult;
  readonly dir: string;
  readonly artifactRoot: string;
}

/** One agent run with a scripted model; `extra` are more flags. */
export async function scriptedRun(
  scratch: Scratch,
  o: {
    profile: string;
    script: string;
    workspace?: string;
    prompt?: string;
    extra?: readonly string[];
    env?: Record<string, string>;
    artifactRoot?: string;
  },
): Promise<Run> {
  const artifactRoot = o.artifactRoot ?? scratch.path(`art-${next()}`);
  const r = await cfh(
    agentRunArgs(
      {
        workspace: o.workspace ?? (await scratch.sampleRepo()),
        artifactRoot,
        profile: o.profile,
        prompt: o.prompt ?? 'Summarise this repository',
        script: o.script,
      },
      ['--non-interactive', ...(o.extra ?? [])],
    ),
    { env: { CFH_KEY_DIR: scratch.path('keys'), ...(o.env ?? {}) } },
  );
  const dir = await onlyRunDir(artifactRoot).catch((error: unknown) => {
    // A planning refusal (125) makes no run: `dir` is empty, for callers that accept one
    // (they check r.exitCode first).
    if (r.exitCode === 125) return '';
    throw new Error(`${String(error)}; cfh exited ${r.exitCode}: ${r.stderr}`);
  });
  return { r, dir, artifactRoot };
}

/** Every tool_result content the model was sent (transcript.jsonl), in order. */
export async function modelResults(dir: string): Promise<string[]> {
  const out: string[] = [];
  const text = await readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
  for (const line of text.trim().split('\n')) {
    const m = JSON.parse(line) as { content: { type: string; content?: unknown }[] };
    for (const b of m.content)
      if (b.type === 'tool_result') out.push(typeof b.content === 'string' ? b.content : '');
  }
  return out;
}

/** The run-salted names cfh minted, as placeholders: what stays of a view across runs. */
export function normalised(text: string): string {
  return text
    .replace(/cfh-val:[a-z2-7]{20}/g, 'cfh-val:<handle>')
    .replace(/cfh-ref:[a-z0-9_-]+:[a-z2-7]{16}/g, 'cfh-ref:<ref>')
    .replace(/outputs\/call-\d+\.std(out|err)/g, 'outputs/<call>');
}

/** The model's view of a run: every tool result, names normalised. */
export async function modelView(dir: string): Promise<string[]> {
  return (await modelResults(dir)).map(normalised);
}

/** Every request body the model received, as text (the transcript), for a value search. */
export async function transcriptText(dir: string): Promise<string> {
  return readFile(path.join(dir, 'transcript.jsonl'), 'utf8');
}

/** A host exec tool program (node) in the scratch directory printing `body` to stdout. */
export async function printer(scratch: Scratch, body: string): Promise<string> {
  const file = scratch.path(`printer-${next()}.mjs`);
  await writeFile(file, `process.stdout.write(${JSON.stringify(body)});\n`, { mode: 0o644 });
  return file;
}

/** The model's view must not depend on the secret's value: the same under both. */
export function expectSameView(a: readonly string[], b: readonly string[]): void {
  expect(a.length).toBe(b.length);
  for (const [i, x] of a.entries()) expect(x, `tool result ${i + 1}`).toBe(b[i]);
}

/** One model turn of the stand-in API: tool calls, or a final text; either from the request. */
export type ApiTurn =
  | {
      readonly calls:
        | readonly { name: string; input: unknown }[]
        | ((req: string) => readonly { name: string; input: unknown }[]);
    }
  | { readonly text: string | ((req: string) => string) };

/**
 * One agent run against the stand-in Messages API (a model that reads its context), with
 * `args` the whole cfh command line (`sandbox run ...` or `sandbox resume ...`).
 */
export async function apiCfh(
  scratch: Scratch,
  args: readonly string[],
  turns: readonly ApiTurn[],
  env: Record<string, string> = {},
): Promise<{ r: CfhResult; bodies: string[] }> {
  const { startMessagesApiServer, okText, okToolUse } =
    await import('../fixtures/messages-api-server.js');
  const api = await startMessagesApiServer();
  try {
    for (const [i, t] of turns.entries())
      api.enqueue((request) => {
        const body = JSON.stringify(request.body);
        if ('text' in t) return okText(typeof t.text === 'function' ? t.text(body) : t.text);
        const calls = typeof t.calls === 'function' ? t.calls(body) : t.calls;
        return okToolUse(calls.map((c, j) => ({ id: `toolu_${next()}_${i}_${j}`, ...c })));
      });
    const r = await cfh([...args, '--provider', 'anthropic'], {
      env: {
        ANTHROPIC_API_KEY: 'sk-test-adv3',
        ANTHROPIC_BASE_URL: api.baseURL,
        CFH_KEY_DIR: scratch.path('keys'),
        ...env,
      },
    });
    return { r, bodies: api.requests.map((q) => JSON.stringify(q.body)) };
  } finally {
    await api.close();
  }
}
