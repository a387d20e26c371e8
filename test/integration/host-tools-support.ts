// What the host-tool tests share: the reference MCP servers installed from the npm registry
// (run offline from node_modules with the repository's Node), profile files written into a
// test's scratch directory, a run against a stand-in Messages API whose turns may read what
// the model was shown, the process table as the kernel shows it, and a search of every file
// a run wrote for a credential in the spellings a program could print it in.
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { REPO_ROOT, agentRunArgs, cfh, onlyRunDir, type Scratch } from './helpers.js';

export const NODE = path.join(REPO_ROOT, '.tools', 'node', 'bin', 'node');
export const MEMORY_SERVER = path.join(
  REPO_ROOT,
  'node_modules/@modelcontextprotocol/server-memory/dist/index.js',
);
export const EVERYTHING_SERVER = path.join(
  REPO_ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);

/** A profile file extending `default` with these fields, in the scratch directory. */
export async function profileFile(
  scratch: Scratch,
  name: string,
  fields: Record<string, unknown>,
): Promise<string> {
  return scratch.file(
    `${name}.yaml`,
    stringify({ extends: 'default', name, description: `test ${name}`, ...fields }),
  );
}

/** A scripted model: one list of tool calls per turn, then a final text. */
export async function scriptFile(
  scratch: Scratch,
  name: string,
  turns: readonly { name: string; input: unknown }[][],
  answer = 'done',
): Promise<string> {
  return scratch.file(
    `${name}.script.yaml`,
    stringify({ turns: [...turns.map((calls) => ({ tool_calls: calls })), { text: answer }] }),
  );
}

/** Pids whose environment holds `NAME=value`, read from /proc (not from cfh's records). */
export async function processesWithEnv(name: string, value: string): Promise<number[]> {
  const wanted = `${name}=${value}`;
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const env = await readFile(`/proc/${entry}/environ`, 'latin1');
      if (env.split('\0').includes(wanted)) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not readable
    }
  }
  return pids;
}

/** Every spelling of `secret` a leak could take: raw, hex, percent, JSON, base64 cores. */
export function spellings(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const out = new Set<string>([
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
  ]);
  for (const k of [0, 1, 2]) {
    const b64 = Buffer.concat([Buffer.alloc(k), bytes]).toString('base64');
    // The characters that depend on the secret alone, standard and URL-safe.
    const core = b64.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    out.add(core);
    out.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...out];
}

/** Every file under `dir` (recursively), as text. */
export async function filesUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out.set(path.relative(dir, file), await readFile(file, 'latin1'));
  }
  return out;
}

/** Where any spelling of `secret` occurs in `texts`: `file: spelling`, empty when none. */
export function leaksIn(texts: ReadonlyMap<string, string>, secret: string): string[] {
  const found: string[] = [];
  for (const [where, text] of texts)
    for (const s of spellings(secret)) if (text.includes(s)) found.push(`${where}: ${s}`);
  return found;
}

export interface ToolCall {
  readonly name: string;
  readonly input: unknown;
}

/** One model turn: its calls, or its calls made from the request asking for it (as JSON). */
export type Turn = readonly ToolCall[] | ((request: string) => readonly ToolCall[]);

export interface ApiRun {
  readonly exitCode: number;
  readonly stderr: string;
  readonly dir: string;
  /** Every request the model received, as JSON, one a line. */
  readonly bodies: string;
}

/** One run with a stand-in Messages API: `turns` of tool calls, then a final text. */
export async function apiRun(
  scratch: Scratch,
  name: string,
  profile: string,
  turns: readonly Turn[],
  env: Record<string, string>,
): Promise<ApiRun> {
  const { startMessagesApiServer, okText, okToolUse } =
    await import('../fixtures/messages-api-server.js');
  const api = await startMessagesApiServer();
  try {
    for (const [i, turn] of turns.entries()) {
      const reply = (calls: readonly ToolCall[]) =>
        okToolUse(calls.map((c, j) => ({ id: `toolu_${i}_${j}`, ...c })));
      api.enqueue(
        typeof turn === 'function'
          ? (request) => reply(turn(JSON.stringify(request.body)))
          : reply(turn),
      );
    }
    api.enqueue(okText('done'));
    const root = scratch.path(`art-${name}`);
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile }, [
        '--provider',
        'anthropic',
      ]),
      {
        env: {
          ANTHROPIC_API_KEY: 'sk-test-host-tools',
          ANTHROPIC_BASE_URL: api.baseURL,
          CFH_KEY_DIR: scratch.path('keys'),
          ...env,
        },
      },
    );
    // A run refused before it existed has no directory: its stderr says why.
    const dir = await onlyRunDir(root).catch((error: unknown) => {
      throw new Error(`${String(error)}; cfh exited ${r.exitCode}: ${r.stderr}`);
    });
    return {
      exitCode: r.exitCode,
      stderr: r.stderr,
      dir,
      bodies: api.requests.map((q) => JSON.stringify(q.body)).join('\n'),
    };
  } finally {
    await api.close();
  }
}
