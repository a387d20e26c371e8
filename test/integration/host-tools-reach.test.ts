// A host tool's program out of every sandbox's reach, and pinned (AH-TOOL-7, AH-CONT-1,
// AH-CONT-5), through the real CLI, the real engine and real host processes. Class: anything
// the host-tool channel runs or hands the tool as code (program, script argument, cwd, a
// module path in its env; for MCP servers the same) that a sandbox of the run could write,
// or that lies behind a link a sandbox could write, runs the sandbox's code on the host with
// the tool's credential. Each attack episode lets a scripted model rewrite the tool's code
// with the sandbox's own tools and then call the tool; the rewritten code would leave a
// marker file on the host. Refused at planning (125, nothing created), the marker never
// appears. What passes planning is pinned: a change between starts fails the run.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  ownBySandbox,
  readEvents,
  startCfh,
  useScratch,
  waitForEvent,
  type CfhResult,
} from './helpers.js';
import { NODE, profileFile, scriptFile } from './host-tools-support.js';

const scratch = useScratch('host-reach');

const HARMLESS = "process.stdout.write('notified\\n');\n";

/** Code that proves it ran on the host: it leaves `marker` (a host path, outside any mount). */
function evil(marker: string): string {
  return `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran on the host');\n`;
}

/** A stdio MCP server in plain Node (no imports to resolve): `hello`, and `slow` (30 s). */
const MINI_MCP = `
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
createInterface({ input: process.stdin }).on('line', async (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  if (msg.method === 'initialize')
    return send({ id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'mini', version: '1' } } });
  if (msg.method === 'tools/list')
    return send({ id: msg.id, result: { tools: ['hello', 'slow'].map((name) => ({ name, inputSchema: { type: 'object', properties: {} } })) } });
  if (msg.method === 'tools/call') {
    if (msg.params.name === 'slow') await new Promise((r) => setTimeout(r, 30000));
    return send({ id: msg.id, result: { content: [{ type: 'text', text: 'hello' }] } });
  }
  send({ id: msg.id, error: { code: -32601, message: 'unknown method' } });
});
`;

const READ_ONLY = { riskClass: 'read_only', sideEffectClass: 'none' } as const;

function notifyTool(argv: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'notify', kind: 'exec', argv, ...READ_ONLY, ...extra };
}

function miniServer(args: string[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'mini',
    kind: 'mcp',
    command: NODE,
    args,
    tools: [
      { name: 'hello', ...READ_ONLY },
      { name: 'slow', ...READ_ONLY, timeoutSeconds: 1 },
    ],
    ...extra,
  };
}

interface Episode {
  readonly name: string;
  readonly repo: string;
  readonly hostTools: Record<string, unknown>[];
  readonly turns: { name: string; input: unknown }[][];
  readonly mode?: 'rw' | 'ro' | 'draft';
  readonly env?: Record<string, string>;
  /** A profile file of the caller's (one kept in the repository, say). */
  readonly profile?: string;
}

async function run(e: Episode): Promise<CfhResult & { root: string }> {
  const profile =
    e.profile ??
    (await profileFile(scratch, e.name, {
      workspace: { mode: e.mode ?? 'rw' },
      tools: ['read_file', 'write_file', 'exec'],
      hostTools: e.hostTools,
    }));
  const root = scratch.path(`art-${e.name}`);
  const script = await scriptFile(scratch, e.name, e.turns);
  const r = await cfh(
    agentRunArgs({ workspace: e.repo, artifactRoot: root, profile, script }, ['--json']),
    { env: e.env ?? {} },
  );
  return { ...r, root };
}

/** The refusal at planning: 125, the code, nothing under the artifact root. */
async function expectRefused(r: CfhResult & { root: string }, code: string): Promise<string> {
  expect(r.exitCode, r.stdout + r.stderr).toBe(125);
  const failure = JSON.parse(r.stdout) as { error: { code: string; message: string } };
  expect(failure.error.code).toBe(code);
  await expect(onlyRunDir(r.root)).rejects.toThrow();
  return failure.error.message;
}

/** A repository with `tools/` the sandbox may write, holding a harmless `file`. */
async function repoWithTool(file: string, body = HARMLESS): Promise<string> {
  const repo = await scratch.sampleRepo();
  await mkdir(path.join(repo, 'tools'));
  await writeFile(path.join(repo, 'tools', file), body);
  await ownBySandbox(path.join(repo, 'tools'));
  await ownBySandbox(path.join(repo, 'tools', file));
  return repo;
}

describe('a host tool inside the sandbox reach is refused at planning', () => {
  it("the model rewrites the exec tool's script in the rw workspace (the issue's layout): 125, the sandbox's code never runs on the host", async () => {
    const marker = scratch.path('pwned-script');
    const repo = await repoWithTool('notify.mjs');
    const r = await run({
      name: 'script-in-workspace',
      repo,
      hostTools: [notifyTool([NODE, 'tools/notify.mjs'], { cwd: repo })],
      turns: [
        [{ name: 'write_file', input: { path: 'tools/notify.mjs', content: evil(marker) } }],
        [{ name: 'host__notify', input: {} }],
      ],
    });
    // First: the sandbox's code did not run on the host (today's code ran it).
    expect(existsSync(marker)).toBe(false);
    const message = await expectRefused(r, 'host_tool_in_sandbox_reach');
    expect(message).toContain('the rw mount at /workspace');
  });

  it('the same through links: a script outside that links into the workspace, a link inside that points out', async () => {
    // (a) The profile names a path outside the workspace; it is a link to a file inside.
    const markerA = scratch.path('pwned-link-in');
    const repoA = await repoWithTool('notify.mjs');
    const outside = scratch.path('notify-link.mjs');
    await symlink(path.join(repoA, 'tools', 'notify.mjs'), outside);
    const a = await run({
      name: 'link-into-workspace',
      repo: repoA,
      hostTools: [notifyTool([NODE, outside])],
      turns: [
        [{ name: 'write_file', input: { path: 'tools/notify.mjs', content: evil(markerA) } }],
        [{ name: 'host__notify', input: {} }],
      ],
    });
    expect(existsSync(markerA)).toBe(false);
    await expectRefused(a, 'host_tool_in_sandbox_reach');
    // (b) The file is outside; the link the profile names is in the workspace: the sandbox
    // writes its own script and repoints the link at it.
    const markerB = scratch.path('pwned-link-out');
    const repoB = await scratch.sampleRepo();
    const safe = await scratch.file('safe-notify.mjs', HARMLESS);
    await symlink(safe, path.join(repoB, 'notify-link.mjs'));
    const b = await run({
      name: 'link-out-of-workspace',
      repo: repoB,
      hostTools: [notifyTool([NODE, path.join(repoB, 'notify-link.mjs')])],
      turns: [
        [
          { name: 'write_file', input: { path: 'evil.mjs', content: evil(markerB) } },
          { name: 'exec', input: { command: ['ln', '-sfn', 'evil.mjs', 'notify-link.mjs'] } },
        ],
        [{ name: 'host__notify', input: {} }],
      ],
    });
    expect(existsSync(markerB)).toBe(false);
    const message = await expectRefused(b, 'host_tool_in_sandbox_reach');
    expect(message).toContain(`through '${path.join(repoB, 'notify-link.mjs')}'`);
  });

  it("a module the tool's env loads from the workspace (NODE_OPTIONS --require): refused", async () => {
    const marker = scratch.path('pwned-require');
    const repo = await scratch.sampleRepo();
    const safe = await scratch.file('safe-require.mjs', HARMLESS);
    const r = await run({
      name: 'env-require',
      repo,
      hostTools: [
        notifyTool([NODE, safe], {
          env: { NODE_OPTIONS: { value: `--require ${path.join(repo, 'hook.cjs')}` } },
        }),
      ],
      turns: [
        [
          {
            name: 'write_file',
            input: {
              path: 'hook.cjs',
              content: `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'x');\n`,
            },
          },
        ],
        [{ name: 'host__notify', input: {} }],
      ],
    });
    expect(existsSync(marker)).toBe(false);
    const message = await expectRefused(r, 'host_tool_in_sandbox_reach');
    expect(message).toContain('env NODE_OPTIONS');
  });

  it('an MCP server whose script is in the workspace (started at first use, after the model wrote it): refused', async () => {
    const marker = scratch.path('pwned-mcp');
    const repo = await repoWithTool('server.mjs', MINI_MCP);
    const r = await run({
      name: 'mcp-in-workspace',
      repo,
      hostTools: [miniServer(['tools/server.mjs'], { cwd: repo, start: 'first-use' })],
      turns: [
        [{ name: 'write_file', input: { path: 'tools/server.mjs', content: evil(marker) } }],
        [{ name: 'mcp__mini__hello', input: {} }],
      ],
    });
    expect(existsSync(marker)).toBe(false);
    await expectRefused(r, 'host_tool_in_sandbox_reach');
  });

  it("draft mode: a script in the draft's source workspace is refused", async () => {
    const repo = await repoWithTool('notify.mjs');
    const r = await run({
      name: 'draft-source',
      repo,
      mode: 'draft',
      hostTools: [notifyTool([NODE, path.join(repo, 'tools', 'notify.mjs')])],
      turns: [[{ name: 'host__notify', input: {} }]],
    });
    const message = await expectRefused(r, 'host_tool_in_sandbox_reach');
    expect(message).toContain("the draft's source workspace");
  });

  it('a profile kept in the repository: its relative paths into it are refused even read-only', async () => {
    const repo = await repoWithTool('notify.mjs');
    const profile = path.join(repo, 'tools', 'profile.yaml');
    await writeFile(
      profile,
      JSON.stringify({
        extends: 'default',
        name: 'in-repo',
        description: 'a profile the repository carries',
        hostTools: [notifyTool([NODE, 'notify.mjs'])],
      }),
    );
    const r = await run({
      name: 'profile-in-repo',
      repo,
      mode: 'ro',
      profile,
      hostTools: [],
      turns: [[{ name: 'host__notify', input: {} }]],
    });
    const message = await expectRefused(r, 'host_tool_in_sandbox_reach');
    expect(message).toContain(`which holds the profile '${profile}'`);
  });

  it('a script another user (the sandbox uid) may write, outside every mount: refused', async () => {
    const owned = await scratch.file('sandbox-owned.mjs', HARMLESS);
    await ownBySandbox(owned);
    const open = await scratch.file('world-writable.mjs', HARMLESS);
    await chmod(open, 0o666);
    for (const [name, script] of [
      ['owned', owned],
      ['open', open],
    ] as const) {
      const r = await run({
        name: `writable-${name}`,
        repo: await scratch.sampleRepo(),
        mode: 'ro',
        hostTools: [notifyTool([NODE, script])],
        turns: [[{ name: 'host__notify', input: {} }]],
      });
      const message = await expectRefused(r, 'host_tool_program_writable');
      expect(message).toMatch(/uid 4321 may write it|anyone may write it/);
    }
  });
});

describe('host tools and the evidence (AH-CONT-5)', () => {
  it('a directory argument that holds the artifact root, or the key directory, is refused', async () => {
    const safe = await scratch.file('safe-fs.mjs', HARMLESS);
    // A file-system server's root: the scratch directory holds the run's artifact root.
    const r = await run({
      name: 'fs-root-artifacts',
      repo: await scratch.sampleRepo(),
      mode: 'ro',
      hostTools: [miniServer([safe, scratch.path('.')])],
      turns: [[{ name: 'mcp__mini__hello', input: {} }]],
    });
    expect(await expectRefused(r, 'host_tool_reaches_evidence')).toContain(
      'is a directory that holds the artifact root',
    );
    // The operator's key directory, elsewhere, named by an exec tool's option.
    const keyHome = scratch.path('keyhome');
    const keyDir = path.join(keyHome, 'keys');
    expect((await cfh(['keys', 'init'], { env: { CFH_KEY_DIR: keyDir } })).exitCode).toBe(0);
    const k = await run({
      name: 'key-dir-arg',
      repo: await scratch.sampleRepo(),
      mode: 'ro',
      hostTools: [notifyTool([NODE, safe, `--store=${keyHome}`])],
      turns: [[{ name: 'host__notify', input: {} }]],
      env: { CFH_KEY_DIR: keyDir },
    });
    expect(await expectRefused(k, 'host_tool_reaches_evidence')).toContain(
      'the signing-key directory',
    );
  });
});

describe('what passes planning is pinned', () => {
  it('an MCP server restarted after a timeout, its script changed meanwhile: refused, the run fails', async () => {
    const marker = scratch.path('pwned-restart');
    const server = await scratch.file('pinned-server.mjs', MINI_MCP);
    const profile = await profileFile(scratch, 'pin-restart', {
      tools: ['exec'],
      hostTools: [miniServer([server], { start: 'run-start' })],
    });
    const root = scratch.path('art-pin-restart');
    const script = await scriptFile(scratch, 'pin-restart', [
      [{ name: 'mcp__mini__slow', input: {} }],
      // Time for the test to change the script while the retired server is replaced.
      [{ name: 'exec', input: { command: ['sleep', '4'] } }],
      [{ name: 'mcp__mini__hello', input: {} }],
    ]);
    const child = startCfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    await waitForEvent(root, 'host_tool_retired');
    await writeFile(server, evil(marker));
    const r = await child;
    // First: the changed script never ran (today's code restarted the server with it).
    expect(existsSync(marker)).toBe(false);
    expect(r.exitCode, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /host tool mini: its args\[0\] '.*pinned-server\.mjs' changed since planning/,
    );
    const changed = (await readEvents(await onlyRunDir(root))).find(
      (e) => e.type === 'host_tool_changed',
    );
    expect(changed?.data).toMatchObject({ tool: 'mini', purpose: 'session', what: 'content' });
  });

  it('an exec tool whose script changed between two calls: the second call does not start', async () => {
    const marker = scratch.path('pwned-exec-pin');
    const tool = await scratch.file('pinned-notify.mjs', HARMLESS);
    const profile = await profileFile(scratch, 'pin-exec', {
      tools: ['exec'],
      hostTools: [notifyTool([NODE, tool])],
    });
    const root = scratch.path('art-pin-exec');
    const script = await scriptFile(scratch, 'pin-exec', [
      [{ name: 'host__notify', input: {} }],
      [{ name: 'exec', input: { command: ['sleep', '4'] } }],
      [{ name: 'host__notify', input: {} }],
    ]);
    const child = startCfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    await waitForEvent(root, 'host_tool_stopped');
    // Replaced by rename, as an editor saves: another inode at the same path.
    await writeFile(`${tool}.new`, evil(marker));
    await import('node:fs/promises').then((fs) => fs.rename(`${tool}.new`, tool));
    const r = await child;
    expect(existsSync(marker)).toBe(false);
    expect(r.exitCode, r.stderr).toBe(1);
    const events = await readEvents(await onlyRunDir(root));
    expect(events.filter((e) => e.type === 'host_tool_started')).toHaveLength(1);
    expect(events.find((e) => e.type === 'host_tool_changed')?.data).toMatchObject({
      tool: 'notify',
      purpose: 'call',
      what: 'replaced',
    });
  });
});
