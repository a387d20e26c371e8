// The host-tool channel of one agent run (AH-TOOL-7..10, AH-CAP-4, AH-LIFE-3): planned before
// the run directory exists (programs, templates, credentials: a failure is 125 with nothing
// created), opened inside the session before the first model request (each MCP server probed:
// `initialize`, `tools/list`, every declared tool present and validatable; an unhealthy one
// fails the run before the model is asked anything), and closed with the session's stack,
// every host process with its whole tree.
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { HostToolError } from '../../errors.js';
import { isWithin } from '../../sandbox/mount-policy.js';
import type { HostToolReach, ReachArea } from '../../tools/host/host-reach.js';
import type { RunPlan } from '../run/run-plan.js';
import type { McpHostTool } from '../../config/host-tools-schema.js';
import { HostProcessLedger } from '../../tools/host/host-process.js';
import type { HostLaunch, HostToolSink } from '../../tools/host/host-launch.js';
import {
  describeAuthority,
  type HostToolPlan,
  type PlannedHostTool,
} from '../../tools/host/host-plan.js';
import { Sanitizer } from '../../tools/host/host-results.js';
import {
  HostToolRunner,
  type CreatedResources,
  type HostBinding,
} from '../../tools/host/host-runner.js';
import {
  execToolDefinition,
  mcpToolDefinitions,
  type HostTool,
} from '../../tools/host/host-tool.js';
import { ExecChannel } from '../../tools/host/exec-channel.js';
import { McpChannel } from '../../tools/host/mcp-channel.js';
import { McpConnection, type McpServerSpec } from '../../tools/host/mcp-connection.js';
import { OpaqueReferences } from '../../tools/host/opaque-refs.js';
import type { HeldCredential, Scrubber } from '../../tools/host/scrub.js';
import type { RunSession } from '../run/run-session.js';

/** What the CLI gives an agent run for its host tools. */
export interface HostToolDeps {
  /** Where host-process ledger records go (`cfh reap` reads them). */
  readonly processDir: string;
  /** cfh's own environment, where `fromEnv` credentials are read. */
  readonly env: NodeJS.ProcessEnv;
  /** Other credentials cfh holds for the run (the model gateway's key): scrubbed too. */
  readonly heldCredentials?: readonly HeldCredential[] | undefined;
  /** The operator's signing-key directory (CFH_KEY_DIR): out of every host tool's reach. */
  readonly keyDir?: string | undefined;
}

/**
 * What the run's sandboxes could write and where its evidence lives, for the host tools'
 * planning checks (host-reach.ts): every rw mount source (the workspace in rw mode), in
 * draft mode the source workspace and every draft copy under the draft root, the workspace
 * whenever a profile of the run lives in it (its relative paths are the repository's, in
 * any mode), and the artifact root and key directory (AH-CONT-5).
 */
export function hostToolReach(plan: RunPlan, keyDir: string | undefined): HostToolReach {
  const writable: ReachArea[] = plan.spec.mounts
    .filter((m) => m.mode === 'rw')
    .map((m) => ({ path: m.source, what: `the rw mount at ${m.target}` }));
  if (plan.draft !== undefined) {
    writable.push({ path: plan.workspace, what: "the draft's source workspace" });
    writable.push({ path: plan.draft.root, what: 'a draft copy', namePrefix: 'cfh-draft-' });
  }
  const profileInside = plan.profileSources.find(
    (s) => path.isAbsolute(s) && isWithin(realOr(s), plan.workspace),
  );
  if (profileInside !== undefined)
    writable.push({
      path: plan.workspace,
      what: `the workspace, which holds the profile '${profileInside}'`,
    });
  const evidence: ReachArea[] = [{ path: plan.artifactRoot, what: 'the artifact root' }];
  if (keyDir !== undefined)
    evidence.push({ path: realOr(keyDir), what: 'the signing-key directory' });
  // Everything a sandbox sees: the mounts as the container gets them (ro ones too) and, in
  // draft mode, the source workspace and the copies, whose files it reads.
  const readable: ReachArea[] = plan.spec.mounts.map((m) => ({
    path: m.source,
    what: `the ${m.mode} mount at ${m.target}`,
  }));
  if (plan.draft !== undefined) {
    readable.push({ path: plan.workspace, what: "the draft's source workspace" });
    readable.push({ path: plan.draft.root, what: 'a draft copy', namePrefix: 'cfh-draft-' });
  }
  return {
    sandboxWritable: writable,
    sandboxReadable: readable,
    evidence,
    trustedUid: process.getuid?.() ?? 0,
  };
}

/** The real path of `p`, or `p` made absolute when it does not exist (yet). */
function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

export interface OpenHostTools {
  readonly tools: readonly HostTool[];
  readonly runner: HostToolRunner | undefined;
}

/** The snapshot's record of the host tools' bounded authority (env by reference + digest). */
export function describeHostTools(plan: HostToolPlan): Record<string, unknown>[] {
  return plan.tools.map((t) => describeAuthority(t.entry, t.env.record, t.program, t.pins));
}

/** What the report keeps: the durable resources created, with their published semantics. */
export function hostToolsReport(open: OpenHostTools | undefined): Record<string, unknown> {
  const created: readonly CreatedResources[] = open?.runner?.created ?? [];
  return { resources: created };
}

/** What starts an MCP server: the checked, pinned program and cwd (host-pin.ts). */
export function serverSpec(planned: PlannedHostTool, entry: McpHostTool): McpServerSpec {
  return {
    name: entry.name,
    command: planned.program,
    executable: planned.executable,
    pins: planned.pins,
    args: entry.args,
    cwd: planned.cwd,
    env: planned.env.env,
    timeoutMs: Math.round(entry.timeoutSeconds * 1000),
    outputBytes: entry.outputBytes,
  };
}

async function openMcp(
  session: RunSession,
  planned: PlannedHostTool,
  entry: McpHostTool,
  launch: HostLaunch,
  refs: OpaqueReferences,
  signal: AbortSignal,
): Promise<{ tools: HostTool[]; channel: McpChannel }> {
  const spec = serverSpec(planned, entry);
  const probe = await McpConnection.open(spec, 'probe', launch, signal);
  // Whatever happens next, the probe is stopped with the run at the latest.
  session.stack.defer(() => probe.close('run_ended'));
  const listed = await probe.listTools(signal);
  const defs = mcpToolDefinitions(entry, listed, refs, launch.scrubber);
  await launch.sink.event(
    'host_tools_listed',
    {
      tool: entry.name,
      // What the server says of itself is the server's text: scrubbed like its results.
      server: launch.scrubber.value(probe.serverInfo()),
      listed: listed.length,
      exposed: defs.tools.map((t) => ({
        name: t.name,
        serverName: t.remoteName,
        classified: t.classified,
        riskClass: t.riskClass,
        sideEffectClass: t.sideEffectClass,
        resourceScope: t.resourceScope,
        permissionPolicy: t.permissionPolicy,
        // Recorded, never trusted: they cannot lower a declared class.
        annotations: t.annotations,
        inputSchemaDigest: t.inputSchemaDigest,
      })),
      skipped: launch.scrubber.value(defs.skipped),
    },
    true,
  );
  if (defs.missing.length > 0 || defs.refused.length > 0) {
    await probe.close('unhealthy');
    const why = [
      ...defs.missing.map((n) => `${n} is not listed by the server`),
      ...defs.refused.map((r) => `${r.name}: ${r.reason}`),
    ];
    throw new HostToolError('host_tool_unhealthy', `host tool ${entry.name}: ${why.join('; ')}`, {
      tool: entry.name,
    });
  }
  const kept = entry.start === 'run-start' ? probe : undefined;
  if (kept === undefined) await probe.close('probe_done');
  const expected = new Map(defs.tools.map((t) => [t.remoteName, t.inputSchemaDigest]));
  const channel = new McpChannel(spec, entry, launch, expected, kept);
  return { tools: defs.tools, channel };
}

export async function openHostTools(
  session: RunSession,
  plan: HostToolPlan,
  deps: HostToolDeps | undefined,
  /** The run's scrubber: every credential of the plan and those cfh holds (agent-run.ts). */
  scrubber: Scrubber,
  signal: AbortSignal,
): Promise<OpenHostTools> {
  if (plan.tools.length === 0) return { tools: [], runner: undefined };
  if (deps === undefined)
    throw new HostToolError('host_tools_unavailable', 'this cfh was given no host-tool channel');
  const { dir } = session;
  const sink: HostToolSink = {
    event: async (type, data, durable) => {
      await dir.events.append(type, data, durable ?? false);
    },
    output: (name, data) => dir.writeOutput(name, data),
  };
  const refs = new OpaqueReferences();
  // The reference and whose it is: the value stays in cfh's memory (operator-only).
  refs.onIssued = (issued) => {
    sink.event('opaque_reference_issued', { ...issued }).catch(() => undefined);
  };
  const launch: HostLaunch = {
    runId: session.plan.runId,
    owner: session.deps.owner,
    ledger: new HostProcessLedger(deps.processDir),
    scrubber,
    sink,
  };
  const bindings: HostBinding[] = [];
  for (const planned of plan.tools) {
    const entry = planned.entry;
    const sanitizer = new Sanitizer(scrubber, refs, entry.name, planned.conceal);
    if (entry.kind === 'exec') {
      const channel = new ExecChannel(planned, entry, launch);
      bindings.push({ tool: execToolDefinition(entry, refs), channel, sanitizer });
      continue;
    }
    const { tools, channel } = await openMcp(session, planned, entry, launch, refs, signal);
    session.stack.defer(() => channel.close());
    for (const tool of tools) bindings.push({ tool, channel, sanitizer });
  }
  const tools = bindings.map((b) => b.tool);
  await sink.event('host_tools_ready', { tools: tools.map((t) => t.name) }, true);
  const cap = session.plan.profile.toolTimeoutSeconds;
  const capMs = cap === undefined ? Number.POSITIVE_INFINITY : cap * 1000;
  return { tools, runner: new HostToolRunner(bindings, sink, capMs) };
}
