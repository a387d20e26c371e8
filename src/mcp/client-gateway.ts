// The model side of a `cfh mcp` run, as the run's evidence names it: an MCP client. cfh sends
// it no model request (the client proposes calls on its own), so the gateway the run session
// needs is a stand-in that says so, and refuses if anything ever asks it for a turn.
import { HarnessInvariantError } from '../errors.js';
import { MCP_CLIENT_ADAPTER } from '../engine/agent/agent-run-records.js';
import type { ModelGateway, ModelResponse } from '../model/gateway.js';

export function mcpClientGateway(client: { name: string; version: string }): ModelGateway {
  return {
    adapter: MCP_CLIENT_ADAPTER,
    route: { transport: 'stdio', client: client.name, clientVersion: client.version },
    model: 'mcp-client',
    counting: 'free',
    complete(): Promise<ModelResponse> {
      return Promise.reject(
        new HarnessInvariantError(
          'mcp_model_request',
          'a model request was made in a cfh mcp run, whose model side is the MCP client',
          {},
        ),
      );
    },
    countInputTokens: () => Promise.resolve(undefined),
  };
}
