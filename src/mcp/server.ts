// `cfh mcp`: cfh as an MCP server over stdio (@modelcontextprotocol/sdk). One connection is
// one cfh agent run whose model side is the MCP client: the run opens once the client has
// initialized (its name and version go into the snapshot), every `tools/call` is a proposal
// answered through the mediator and the run's containers (mcp-calls.ts), the evidence is
// readable as resources (resources.ts), and the run ends when the connection closes (stdin
// ends, the client closes) or cfh is cancelled: terminal record written, containers reaped.
// stdout carries the protocol only; logs go to stderr.
import { Readable, Writable } from 'node:stream';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  executeAgentRun,
  type AgentOutcome,
  type AgentRequest,
  type AgentRunDeps,
} from '../engine/agent/agent-run.js';
import type { RunPlan } from '../engine/run/run-plan.js';
import { draftPart } from '../engine/agent/tool-surface.js';
import type { Logger } from '../log.js';
import { CFH_VERSION } from '../version.js';
import { mcpClientGateway } from './client-gateway.js';
import { McpCalls } from './mcp-calls.js';
import { listResources, readResource } from './resources.js';
import { listTools, mcpRegistry, proposalOf, toolResultOf } from './tool-surface.js';

export interface McpServeRequest {
  readonly plan: RunPlan;
  /** The run's approvals: only what the operator configured; the client is never asked. */
  readonly approvals: AgentRequest['approvals'];
  /** The run's dependencies but the gateway (the MCP client is the model side). */
  readonly deps: Omit<AgentRunDeps, 'gateway'>;
  readonly input: NodeJS.ReadableStream;
  readonly output: NodeJS.WritableStream;
  readonly log: Logger;
}

const INSTRUCTIONS = [
  'cfh runs each tool call in a hardened container over the workspace, decided by its policy and recorded as evidence.',
  'A call answered approval_required did not run: only the operator can approve it (cfh mcp --approve / --approvals).',
].join(' ');

/**
 * Serves one connection. Resolves with the run's outcome, or undefined when the connection
 * closed (or cfh was cancelled) before the client initialized: then no run was started.
 */
export async function serveMcp(
  request: McpServeRequest,
  signal: AbortSignal,
): Promise<AgentOutcome | undefined> {
  const plan = request.plan;
  const registry = mcpRegistry(plan.profile.tools, draftPart(plan.workspaceMode, plan.cfc));
  const calls = new McpCalls(registry);
  // The SDK's low-level server: the tools' JSON schemas come from the built-ins' own
  // contracts (tool-surface.ts), and every call is checked by the mediator, not by the SDK.
  // Neither list changes during a connection, so neither capability says `listChanged`.
  // The SDK names this its advanced use: the handlers are cfh's own, not McpServer's registry.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  const server = new Server(
    { name: 'cfh', version: CFH_VERSION },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  const tools = listTools(registry);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
    const proposal = proposalOf(call.params.name, call.params.arguments ?? {});
    const observation = await calls.call(
      proposal.name,
      proposal.input,
      AbortSignal.any([signal, extra.signal]),
    );
    return toolResultOf(observation);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: listResources(await calls.evidence()),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (read) =>
    readResource(await calls.evidence(), read.params.uri),
  );
  const connection = { closed: false };
  const initialized = new Promise<boolean>((resolve) => {
    server.oninitialized = () => {
      resolve(true);
    };
    const gone = (): void => {
      connection.closed = true;
      calls.close();
      resolve(false);
    };
    server.onclose = gone;
    // The SDK's transport does not watch for the end of stdin: the client went away.
    request.input.once('end', gone);
    request.input.once('close', gone);
    if (signal.aborted) resolve(false);
    else
      signal.addEventListener(
        'abort',
        () => {
          resolve(false);
        },
        { once: true },
      );
  });
  server.onerror = (error) => {
    request.log.error({ err: error.message }, 'mcp connection error');
  };
  const transport = new StdioServerTransport(
    new Readable().wrap(request.input),
    writableOf(request.output),
  );
  await server.connect(transport);
  try {
    if (!(await initialized) || connection.closed) return undefined;
    const client = server.getClientVersion() ?? { name: 'unknown', version: 'unknown' };
    return await executeAgentRun(
      request.plan,
      {
        // No direct command: the client's text carries no prompt authority (AH-CFC-3).
        slots: { prompt: '' },
        mode: 'run',
        approvals: request.approvals,
        modelSide: {
          kind: 'mcp-client',
          transport: 'stdio',
          client: { name: client.name, version: client.version },
          protocolVersion: null,
          directCommand: null,
        },
      },
      { ...request.deps, gateway: mcpClientGateway(client) },
      signal,
      calls.driver,
    );
  } finally {
    calls.close();
    await server.close().catch(() => undefined);
  }
}

/** The printer's stdout as the stream class the SDK's transport takes. */
function writableOf(out: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      out.write(chunk, (error) => {
        done(error ?? null);
      });
    },
  });
}
