// Opaque references of host tools against real runs (AH-REF-1..4, AH-TOOL-8/10): a reference
// is minted only from a field of a structured result the profile names (server-memory's
// structuredContent, an exec tool's declared JSON) and round-trips to its own tool; a match
// of a free-text pattern is concealed by a marker, and whatever the model hands back for it
// is inert; a reference guessed by its spelling (another number, another run's name) is an
// invalid argument and nothing is sent; the evidence keeps the reference's name, authority
// and kind, and no digest of the value (not even of the call's resolved arguments).
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { argsDigest } from '../../src/mediator/mediator.js';
import {
  agentRunArgs,
  cfh,
  onlyRunDir,
  readEvents,
  readJson,
  toolResults,
  useScratch,
} from './helpers.js';
import {
  MEMORY_SERVER,
  NODE,
  apiRun,
  filesUnder,
  profileFile,
  scriptFile,
  type ToolCall,
} from './host-tools-support.js';

const scratch = useScratch('host-refs');

/** The ticket tool: logs every id it is given, prints a created ticket or the one asked for. */
const TICKET_SCRIPT = [
  'printf "%s\\n" "$1" >> "$TICKET_LOG"',
  'if [ "$1" = new ]; then echo \'{"ticket": {"id": "T-40417"}, "note": "see also T-40418"}\'; exit 0; fi',
  'printf \'{"ticket": {"id": "%s"}, "status": "open"}\\n\' "$1"',
].join('\n');
const TICKET_PATTERN = { kind: 'ticket', pattern: 'T-[0-9]{5}' };
const TICKET_FIELD = { kind: 'ticket', field: '/ticket/id' };

async function ticketTool(
  log: string,
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  // A file beside the profile: an argv literal may hold no braces.
  const script = await scratch.file('ticket.sh', `${TICKET_SCRIPT}\n`);
  return {
    name: 'ticket',
    kind: 'exec',
    argv: ['/bin/sh', script, '{id}'],
    input: { id: { type: 'string', pattern: 'new|T-[0-9]{5}' } },
    env: { TICKET_LOG: { value: log } },
    riskClass: 'read_only',
    sideEffectClass: 'none',
    ...extra,
  };
}

function memoryTool(graph: string): Record<string, unknown> {
  return {
    name: 'memory',
    kind: 'mcp',
    command: NODE,
    args: [MEMORY_SERVER],
    env: { MEMORY_FILE_PATH: { value: graph } },
    tools: [
      { name: 'open_nodes', riskClass: 'read_only', sideEffectClass: 'none' },
      {
        name: 'create_entities',
        riskClass: 'write_internal',
        sideEffectClass: 'internal_state_change',
        resourceScope: 'project',
        resources: {
          kind: 'entity',
          idField: '/entities/*/name',
          enumerate: 'read_graph lists every entity',
          cancel: 'not cancellable once created',
          cleanup: 'delete_entities with the names',
          retention: 'until deleted from the graph file',
        },
      },
    ],
  };
}

const ALLOW_WRITES = {
  id: 'test-memory-writes',
  match: { tool: 'mcp__memory__create_entities' },
  decision: 'allow',
  reason: 'the test writes its own scratch graph',
};

/** The one reference of `authority` the model was shown, in the request for a turn. */
function shownRef(request: string, authority: string): string {
  const refs = new Set(request.match(new RegExp(`cfh-ref:${authority}:[a-z2-7]{16}`, 'g')) ?? []);
  expect([...refs]).toHaveLength(1);
  return [...refs][0] ?? '';
}

async function logged(file: string): Promise<string[]> {
  return existsSync(file) ? (await readFile(file, 'utf8')).trim().split('\n') : [];
}

/** Each refused call's id and why, from the evidence. */
async function rejected(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readEvents(dir))
    if (e.type === 'tool_rejected') out[String(e.data.callId)] = String(e.data.reason);
  return out;
}

describe('class: a reference is minted from free text (AH-REF-1)', () => {
  it('a pattern match is concealed by a marker; handing back what would have named it sends nothing', async () => {
    const log = scratch.path('pattern.log');
    const profile = await profileFile(scratch, 'pattern', {
      hostTools: [await ticketTool(log, { operatorOnly: [TICKET_PATTERN] })],
    });
    // The names a free-text match was given before (sequential), and the marker itself.
    const script = await scriptFile(scratch, 'pattern', [
      [{ name: 'host__ticket', input: { id: 'new' } }],
      [{ name: 'host__ticket', input: { id: 'cfh-ref:ticket:2' } }],
      [{ name: 'host__ticket', input: { id: 'cfh-ref:ticket:1' } }],
      [{ name: 'host__ticket', input: { id: '[operator-only:ticket]' } }],
    ]);
    const root = scratch.path('art-pattern');
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(0);
    const dir = await onlyRunDir(root);
    const [created, second, first, marker] = await toolResults(dir);
    const shown = JSON.stringify(created?.observation);
    expect(shown).toContain('[operator-only:ticket]');
    expect(shown).not.toMatch(/cfh-ref:|T-4041/);
    for (const guessed of [second, first]) {
      expect(guessed?.observation.status).toBe('error');
      expect(guessed?.observation.summary).toMatch(/is not a reference this run holds/);
    }
    // The marker is no reference: the field's pattern refuses it like any text it does not match.
    expect(marker?.observation.summary).toMatch(/invalid arguments: id: id must match/);
    expect(await rejected(dir)).toEqual({
      'call-0002': 'invalid_arguments',
      'call-0003': 'invalid_arguments',
      'call-0004': 'invalid_arguments',
    });
    // Nothing reached the tool but the first call.
    expect(await logged(log)).toEqual(['new']);
  });

  it("a field of an MCP tool's structured content round-trips as a reference to its own tool only", async () => {
    const log = scratch.path('mcp.log');
    const profile = await profileFile(scratch, 'mcp-field', {
      hostTools: [memoryTool(scratch.path('mcp-graph.jsonl')), await ticketTool(log)],
      policy: [ALLOW_WRITES],
    });
    const name = 'carol-operator-only-name';
    let ref = '';
    const r = await apiRun(
      scratch,
      'mcp-field',
      profile,
      [
        [
          {
            name: 'mcp__memory__create_entities',
            input: {
              entities: [{ name, entityType: 'person', observations: ['met at the test'] }],
            },
          },
        ],
        (request): ToolCall[] => {
          ref = shownRef(request, 'memory');
          return [
            { name: 'mcp__memory__open_nodes', input: { names: [ref] } },
            { name: 'host__ticket', input: { id: ref } },
          ];
        },
      ],
      {},
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(ref).toMatch(/^cfh-ref:memory:[a-z2-7]{16}$/);
    const [, opened, crossed] = await toolResults(r.dir);
    expect(opened?.observation.status).toBe('success');
    const openedText = JSON.stringify(opened?.observation);
    expect(openedText).toContain('met at the test');
    expect(openedText).toContain(ref);
    expect(openedText).not.toContain(name);
    expect(crossed?.observation.summary).toMatch(/belongs to host tool 'memory', not to 'ticket'/);
    expect(await logged(log)).toEqual([]);
    const report = await readJson<Record<string, any>>(path.join(r.dir, 'report.json'));
    expect(report.hostTools.resources).toEqual([
      expect.objectContaining({ kind: 'entity', ids: [name], references: [ref] }),
    ]);
    const issued = (await readEvents(r.dir)).filter((e) => e.type === 'opaque_reference_issued');
    expect(issued.map((e) => e.data)).toEqual([{ ref, authority: 'memory', kind: 'entity' }]);
  });
});

describe('class: a reference is guessed by its spelling (AH-REF-2/3)', () => {
  it("another number, a well-formed name never minted, another run's name: invalid, nothing sent", async () => {
    const profileOf = async (log: string) =>
      profileFile(scratch, `spelling-${path.basename(log, '.log')}`, {
        hostTools: [
          await ticketTool(log, { output: 'json', operatorOnly: [TICKET_FIELD, TICKET_PATTERN] }),
        ],
      });
    const first = await apiRun(
      scratch,
      'spelling-first',
      await profileOf(scratch.path('first.log')),
      [[{ name: 'host__ticket', input: { id: 'new' } }]],
      {},
    );
    expect(first.exitCode, first.stderr).toBe(0);
    const earlier = shownRef(JSON.stringify((await toolResults(first.dir))[0]), 'ticket');

    const log = scratch.path('second.log');
    let mine = '';
    const guesses = ['cfh-ref:ticket:1', `cfh-ref:ticket:${'a'.repeat(16)}`, earlier];
    const second = await apiRun(
      scratch,
      'spelling-second',
      await profileOf(log),
      [
        [{ name: 'host__ticket', input: { id: 'new' } }],
        (request) => {
          mine = shownRef(request, 'ticket');
          return guesses.map((id) => ({ name: 'host__ticket', input: { id } }));
        },
        () => [{ name: 'host__ticket', input: { id: mine } }],
      ],
      {},
    );
    expect(second.exitCode, second.stderr).toBe(0);
    // The same value, another run: another name.
    expect(earlier).toMatch(/^cfh-ref:ticket:[a-z2-7]{16}$/);
    expect(mine).toMatch(/^cfh-ref:ticket:[a-z2-7]{16}$/);
    expect(mine).not.toBe(earlier);
    const [created, one, never, theirs, own] = await toolResults(second.dir);
    expect(JSON.stringify(created?.observation)).toContain('[operator-only:ticket]');
    for (const refused of [one, never, theirs])
      expect(refused?.observation.summary).toMatch(/is not a reference this run holds/);
    expect(own?.observation.status).toBe('success');
    expect(JSON.stringify(own?.observation)).toContain(mine);
    expect(await rejected(second.dir)).toEqual({
      'call-0002': 'invalid_arguments',
      'call-0003': 'invalid_arguments',
      'call-0004': 'invalid_arguments',
    });
    // The run's own reference reached the tool as the value; nothing else was sent.
    expect(await logged(log)).toEqual(['new', 'T-40417']);
  });
});

describe('class: the evidence keeps a digest of a referenced value (AH-REF-3/4)', () => {
  it('the value is in outputs/ only: no event, record, digest or model request holds it', async () => {
    const log = scratch.path('evidence.log');
    const profile = await profileFile(scratch, 'evidence', {
      hostTools: [await ticketTool(log, { output: 'json', operatorOnly: [TICKET_FIELD] })],
    });
    let ref = '';
    const r = await apiRun(
      scratch,
      'evidence',
      profile,
      [
        [{ name: 'host__ticket', input: { id: 'new' } }],
        (request) => {
          ref = shownRef(request, 'ticket');
          return [{ name: 'host__ticket', input: { id: ref } }];
        },
      ],
      {},
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await logged(log)).toEqual(['new', 'T-40417']);
    const VALUE = 'T-40417';
    expect(r.bodies).not.toContain(VALUE);
    const files = await filesUnder(r.dir);
    const unkeyed = [
      createHash('sha256').update(VALUE).digest('hex'),
      argsDigest('host__ticket', { id: VALUE }).slice('sha256:'.length),
    ];
    for (const [file, text] of files) {
      if (!file.startsWith('outputs/')) expect(text.includes(VALUE), file).toBe(false);
      for (const d of unkeyed) expect(text.includes(d), `${file}: ${d}`).toBe(false);
    }
    expect(
      [...files.entries()].some(([f, t]) => f.startsWith('outputs/') && t.includes(VALUE)),
    ).toBe(true);
    // The call is digested as the model sent it.
    const decisions = (await readEvents(r.dir)).filter((e) => e.type === 'permission_decision');
    expect(decisions[1]?.data.args_digest).toBe(argsDigest('host__ticket', { id: ref }));
    const issued = (await readEvents(r.dir)).filter((e) => e.type === 'opaque_reference_issued');
    expect(issued.map((e) => e.data)).toEqual([{ ref, authority: 'ticket', kind: 'ticket' }]);
  });
});

describe('class: a profile of free-text ids changes meaning silently', () => {
  const refused = async (name: string, tool: Record<string, unknown>) => {
    const profile = await profileFile(scratch, name, { hostTools: [tool] });
    const script = await scriptFile(scratch, name, []);
    const root = scratch.path(`art-${name}`);
    const r = await cfh(
      agentRunArgs({ workspace: await scratch.sampleRepo(), artifactRoot: root, profile, script }),
    );
    expect(r.exitCode, r.stderr).toBe(125);
    expect(existsSync(root) ? await filesUnder(root) : new Map()).toEqual(new Map());
    return r.stderr;
  };

  it("resources' idPattern is refused before anything exists, naming idField", async () => {
    const memory = memoryTool(scratch.path('legacy.jsonl')) as { tools: Record<string, any>[] };
    const create = memory.tools[1] ?? {};
    create.resources = {
      ...create.resources,
      idField: undefined,
      idPattern: '"name":\\s*"([^"]+)"',
    };
    const stderr = await refused('legacy', memory);
    expect(stderr).toMatch(/^cfh: .*idPattern is retired.*idField.*$/m);
  });

  it('a field pointer that does not parse, or an exec tool without JSON output, is refused', async () => {
    const log = scratch.path('never.log');
    expect(
      await refused(
        'bad-pointer',
        await ticketTool(log, {
          output: 'json',
          operatorOnly: [{ kind: 'ticket', field: 'ticket/id' }],
        }),
      ),
    ).toMatch(/^cfh: .*JSON Pointer starts with '\/'/m);
    expect(
      await refused('text-output', await ticketTool(log, { operatorOnly: [TICKET_FIELD] })),
    ).toMatch(/^cfh: .*declare output: json/m);
    expect(await logged(log)).toEqual([]);
  });
});
