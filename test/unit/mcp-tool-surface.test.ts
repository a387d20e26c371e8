// The MCP face of the built-in tools (src/mcp/tool-surface.ts): only the profile's built-ins
// are listed, sandbox_exec's schema is exec's with `command` renamed `argv`, and what a client
// sends is translated back without letting it reach a tool MCP does not list.
import { describe, expect, it } from 'vitest';
import { listTools, mcpRegistry, proposalOf, toolResultOf } from '../../src/mcp/tool-surface.js';
import { errorObservation } from '../../src/tools/observation.js';

describe('MCP tool surface', () => {
  it('lists only the profile built-ins, exec as sandbox_exec {argv, timeout?}', () => {
    const tools = listTools(mcpRegistry(['read_file', 'exec'], []));
    expect(tools.map((t) => t.name).sort()).toEqual(['read_file', 'sandbox_exec']);
    const exec = tools.find((t) => t.name === 'sandbox_exec');
    expect(exec?.inputSchema.required).toEqual(['argv']);
    expect(Object.keys(exec?.inputSchema.properties as object).sort()).toEqual(['argv', 'timeout']);
    expect(exec?.description).toContain('`argv`');
    expect(exec?.annotations.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === 'read_file')?.annotations.readOnlyHint).toBe(true);
  });

  it('translates sandbox_exec back to exec, and keeps the built-in field name apart', () => {
    expect(proposalOf('sandbox_exec', { argv: ['ls'], timeout: 5 })).toEqual({
      name: 'exec',
      input: { command: ['ls'], timeout: 5 },
    });
    // `command` is not the MCP contract: it must not pass as argv (the schema refuses it).
    expect(proposalOf('sandbox_exec', { command: ['id'] })).toEqual({
      name: 'exec',
      input: { 'mcp:command': ['id'] },
    });
  });

  it('never lets a client reach a built-in under a name MCP does not list', () => {
    expect(proposalOf('exec', { command: ['id'] }).name).toBe('unlisted:exec');
    expect(proposalOf('read_file', { path: 'a' })).toEqual({
      name: 'read_file',
      input: { path: 'a' },
    });
    expect(proposalOf('anything', {}).name).toBe('anything');
  });

  it('answers with the observation, an error unless it succeeded', () => {
    const refused = toolResultOf(errorObservation('approval_required', 'ask'));
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ status: 'approval_required' });
    expect(JSON.parse(refused.content[0]?.text ?? '')).toMatchObject({ summary: 'ask' });
  });
});
