// `cfh doctor --profile P`: is each host tool the profile declares healthy (AH-CAP-4)? Its
// program found and executable, its credentials present (never shown), and an MCP server
// started, through `initialize`, listing every declared tool with a schema cfh can validate.
// Each server started here is stopped with its whole tree before the check is reported.
import { randomBytes } from 'node:crypto';
import { errorMessage } from '../../errors.js';
import type { Profile } from '../../config/profile-schema.js';
import { currentOwner } from '../../sandbox/owner.js';
import { HostProcessLedger } from '../../tools/host/host-process.js';
import { planHostTools, type PlannedHostTool } from '../../tools/host/host-plan.js';
import { mcpToolDefinitions } from '../../tools/host/host-tool.js';
import { McpConnection } from '../../tools/host/mcp-connection.js';
import { OpaqueReferences } from '../../tools/host/opaque-refs.js';
import { Scrubber } from '../../tools/host/scrub.js';
import type { DoctorCheck } from './doctor.js';
import { serverSpec } from '../agent/host-tools.js';

async function checkMcp(
  planned: PlannedHostTool,
  ledgerDir: string,
  signal: AbortSignal,
): Promise<string> {
  const entry = planned.entry;
  if (entry.kind !== 'mcp') return `${planned.program} is executable`;
  const scrubber = new Scrubber(planned.env.credentials);
  const launch = {
    runId: `doctor-${randomBytes(4).toString('hex')}`,
    owner: currentOwner(),
    ledger: new HostProcessLedger(ledgerDir),
    scrubber,
    sink: { event: () => Promise.resolve(), output: () => Promise.resolve('') },
  };
  const conn = await McpConnection.open(serverSpec(planned, entry), 'probe', launch, signal);
  try {
    const listed = await conn.listTools(signal);
    const defs = mcpToolDefinitions(entry, listed, new OpaqueReferences(), scrubber);
    const problems = [
      ...defs.missing.map((n) => `${n} not listed`),
      ...defs.refused.map((r) => `${r.name}: ${r.reason}`),
    ];
    if (problems.length > 0) throw new Error(problems.join('; '));
    const server = conn.serverInfo();
    return `${String(server.name)} ${String(server.version)}: initialize ok, ${listed.length} listed, exposes ${defs.tools.map((t) => t.name).join(', ')}${defs.skipped.length > 0 ? ` (${defs.skipped.length} skipped)` : ''}`;
  } finally {
    await conn.close('doctor');
  }
}

export async function checkHostTools(
  profile: Profile,
  env: NodeJS.ProcessEnv,
  ledgerDir: string,
  signal: AbortSignal,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  for (const entry of profile.hostTools) {
    const name = `host-tool:${entry.name}`;
    try {
      const [planned] = planHostTools([entry], 'doctor', env).tools;
      if (planned === undefined) throw new Error('not planned');
      const detail = await checkMcp(planned, ledgerDir, signal);
      checks.push({ name, ok: true, required: true, detail });
    } catch (error) {
      signal.throwIfAborted();
      checks.push({ name, ok: false, required: true, detail: errorMessage(error) });
    }
  }
  return checks;
}
