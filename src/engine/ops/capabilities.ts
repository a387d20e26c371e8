// AH-CAP-1/2: what this cfh understands, machine-readable, without an engine or a model.
// Advertised capability is not dependency health; `cfh doctor` checks that (AH-CAP-4).
import { HOST_OBEYED_NAMES } from '../../host-obeyed.js';
import { BUDGET_FLAGS } from '../../config/budget-flags.js';
import { CfcMode, CfcSection } from '../../config/cfc-schema.js';
import { listBuiltinProfiles } from '../../config/profile-loader.js';
import { resolveChildren } from '../../config/child-profiles.js';
import { DEFAULT_POOL_SIZE, MAX_POOL_SIZE, ToolLifetime } from '../../config/profile-schema.js';
import { RATE_CARD_FILE, ROUTE_PRICING_FILE } from '../../model/cost.js';
import { CFH_VERSION } from '../../version.js';
import { BUILTIN_TOOLS } from '../../tools/builtins.js';
import { DecisionValue, RiskClass, SideEffectClass } from '../../config/vocabulary.js';
import type { Profile } from '../../config/profile-schema.js';
import { MODEL_PROVIDERS, ModelWire } from '../../config/model-schema.js';
import { describeAuthority } from '../../tools/host/host-plan.js';
import { COMPACT_AT_DEFAULT, MIN_COMPACT_TOKENS } from '../../config/context-schema.js';
import {
  KEEP_RECENT_TURNS,
  MAX_COMPACTION_FAILURES,
  NATIVE_NOT_USED,
  NATIVE_STRATEGIES,
} from '../agent/compaction.js';
import { NETWORK_MODES } from '../../config/postures.js';

/**
 * `profile`: the profile `--profile P` names; its host tools are listed under `hostTools`,
 * apart from the sandbox tools (AH-TOOL-7), and never among `parentTools` (AH-CONT-3).
 */
export function describeCapabilities(profile?: Profile): Record<string, unknown> {
  return {
    schema: 'cfh.capabilities/1',
    cfhVersion: CFH_VERSION,
    commands: [
      'sandbox run',
      'sandbox resume',
      'policy explain',
      'profiles list',
      'profiles show',
      'image build',
      'image ls',
      'image rm',
      'capabilities',
      'doctor',
      'reap',
      'runs list',
      'runs show',
      'runs diff',
      'runs apply',
      'runs report',
      'runs export',
      'runs prune',
      'audit',
      'keys init',
      'labels list',
      'labels forget',
      'serve',
      'mcp',
    ],
    // The tools a profile may allow (its `tools` list is the run's actual surface).
    parentTools: BUILTIN_TOOLS.map((t) => ({
      name: t.name,
      riskClass: t.riskClass,
      sideEffectClass: t.sideEffectClass,
    })),
    nativeModelTools: [],
    // The host tools a profile declares (`--profile P`): trusted programs on the host, each
    // with its bounded authority; none without a profile.
    profile: profile?.name ?? null,
    hostTools: (profile?.hostTools ?? []).map((t) => describeAuthority(t)),
    // AH-DEL-2, AH-CAP-2: each child profile `--profile P` lists, with what it may do.
    childProfiles: profile === undefined ? [] : describeChildren(profile),
    hostToolChannel: {
      kinds: ['mcp', 'exec'],
      mcpTransport: 'stdio',
      modelNames: ['mcp__<server>__<tool>', 'host__<name>'],
      credentialReferences: ['fromEnv', 'fromFile'],
      // What reaches the model of a result (AH-TOOL-10).
      sanitization: {
        credentials: ['raw', 'json-escape', 'percent-encoding', 'hex', 'base64', 'base64url'],
        // AH-REF-1..4: references only for fields of a structured result, run-salted names;
        // free-text patterns conceal with a marker that resolves to nothing.
        operatorOnlyIdentifiers: {
          structuredFields: 'cfh-ref:<authority>:<16 base32>',
          freeTextPatterns: '[operator-only:<kind>]',
          referenceLifetime: 'run',
        },
      },
      lifecycle: ['first-use', 'run-start'],
      unclassifiedDecision: 'approval_required',
    },
    modelGateways: ['scripted', 'anthropic', 'openai-compatible'],
    // The route is configuration, chosen once and recorded (AH-INV-2, AH-INV-5): the
    // profile's `model` section, the flags over it, each provider's variables as fallbacks.
    modelRoutes: {
      providers: [...MODEL_PROVIDERS],
      wires: { 'openai-compatible': [...ModelWire.options] },
      profileKey: 'model',
      flags: ['--provider', '--model', '--base-url'],
      environment: {
        anthropic: ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'CFH_MODEL'],
        'openai-compatible': ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'CFH_MODEL'],
      },
      fallback: 'none: a provider failure fails the run on its route',
      perChild: 'children.<name>.model',
      profileRoute: profile === undefined ? null : routeOf(profile),
    },
    agentRun: {
      promptSlots: ['--prompt', '--context', '--quote'],
      // Each budget's profile key and its flag (AH-LIFE-4).
      budgets: BUDGET_FLAGS.map((b) => ({ budget: b.field, flag: `--${b.flag}` })),
      toolContainerLifetimes: [...ToolLifetime.options],
      // Issue 21: per-call containers from a warm pool of pristine ones per kind, made ahead.
      toolContainerPool: {
        lifetime: 'per-call',
        profileKey: 'pool.size',
        default: DEFAULT_POOL_SIZE,
        max: MAX_POOL_SIZE,
        disabledBy: 0,
        evidence: ['tool_container_pooled', 'tool_container_taken'],
        auditCheck: 'lifecycle.pool',
      },
      // AH-USAGE-4: harness estimates from the repository's rate card, never a charge.
      costEstimates: true,
      rateCard: RATE_CARD_FILE,
      // Governance extension: who can approve a call that asks, and planning mode.
      approvals: {
        surfaces: ['flag', 'file', 'tty'],
        flags: ['--approve', '--approvals', '--non-interactive'],
        strongerAuth: 'tty: the args digest typed',
      },
      planningMode: { flags: ['--plan', '--from-plan'], planFile: 'plan.md' },
    },
    profiles: listBuiltinProfiles(),
    // CFC integration profile (AH-CFC-14/16): the modes, the default, the profile's own
    // mode (`--profile P`), and the one component trusted to assign labels and decide flows.
    cfc: {
      modes: { supported: [...CfcMode.options], default: CfcSection.parse({}).mode },
      profileMode: profile?.cfc.mode ?? null,
      flags: ['--cfc', '--label'],
      trustedComponent: 'cfh',
      labelSources: ['workspace', 'mounts', 'network.allow destinations', 'host tools'],
      valueHandles: 'cfh-val:<20 base32: run-salted, one per result held>',
    },
    sandbox: {
      runtimes: ['runc', 'runsc'],
      networkModes: {
        supported: [...NETWORK_MODES],
        destinations: ['host', 'host:port', '*.domain', 'ip', 'ip/prefix', '[v6]:port'],
        enforcement:
          'guard namespace + in-process egress gateway (TLS server name, HTTP Host, DNS filter)',
      },
      // draft: the sandbox works on a copy; `cfh runs apply` commits its patch, approved.
      workspaceModes: ['ro', 'rw', 'draft'],
      // Class 9: the paths a host tool obeys (src/host-obeyed.ts) are read-only at the top
      // of an rw mount (`hostObeyed: rw` names them writable), found and said elsewhere,
      // and written by an apply only when named (`--host-obeyed PATH`).
      hostObeyed: {
        modes: ['ro', 'rw'],
        default: 'ro',
        names: HOST_OBEYED_NAMES.map((n) => n.name),
      },
      seccomp: {
        mode: 'derived-default-deny',
        derivedPerProfile: true,
        grants: ['allowPtrace', 'allowIoUring', 'allowUserNamespaces', 'allow32BitAbis', 'allow'],
        enforcement: ['kernel-seccomp', 'gvisor-oci-seccomp', 'not-applied-gvisor'],
      },
      limits: ['memory', 'cpus', 'pids', 'wallTimeSeconds', 'outputBytes', 'tmpfs'],
      hardening: [
        'cap-drop-all',
        'no-new-privileges',
        'seccomp',
        'read-only-rootfs',
        'init',
        'non-root-user',
        'no-published-ports',
        'private-pid-ipc-net',
      ],
    },
    repeatableFields: {
      'sandbox run': [
        '--mount',
        '--allow',
        '--deny',
        '--context',
        '--quote',
        '--approve',
        '--label',
      ],
      // AH-ART-4: narrowing overrides of a resumed run (docs/operators.md, "Resuming a run").
      'sandbox resume': ['--mount', '--allow', '--deny', '--tool', '--approve'],
    },
    protocolFeatures: {
      json: true,
      streaming: true,
      cancellation: ['SIGINT', 'SIGTERM', 'SIGHUP'],
      interactiveSessions: true,
      // `cfh mcp`: one MCP connection over stdio is one run; the client proposes, the
      // mediator decides (test/integration/mcp.test.ts); a draft session adds runs_diff and
      // runs_apply (test/integration/mcp-draft.test.ts).
      mcpServer: {
        transport: 'stdio',
        tools: ['sandbox_exec', 'read_file', 'write_file', 'edit_file', 'list_dir', 'grep'],
        draftTools: ['runs_diff', 'runs_apply'],
        resources: ['snapshot.json', 'events.jsonl', 'governance.jsonl', 'report.json'],
        approvals: 'operator-configured only (--approve, --approvals)',
      },
      // AH-DEL-1..5: the `delegate` tool, child runs in containers of their own
      // (test/integration/children.test.ts).
      delegation: {
        tool: 'delegate',
        profileKey: 'children',
        evidence: 'RUN/children/<childId>/, child_started/child_finished in the parent chain',
        budgets:
          "a slice of the parent's: the least of the child's and a 1/maxParallelChildren share of what is left",
        depthKey: 'budgets.maxDelegationDepth',
        parallelKeys: ['budgets.maxParallelChildren', 'children.<name>.maxParallel'],
      },
      resume: true,
      compaction: true,
    },
    // AH-LIFE-6/7: when and how the model context is compacted; each run's snapshot `context`
    // says the threshold and state it ran with.
    contextCompaction: {
      profileKey: 'context.compactAt',
      forms: [
        `tokens (integer >= ${MIN_COMPACT_TOKENS})`,
        'fraction of the window (0 < f < 1)',
        'disabled',
      ],
      default: COMPACT_AT_DEFAULT,
      windowKey: 'context.windowTokens',
      mechanism: 'summary-request',
      keepRecentTurns: KEEP_RECENT_TURNS,
      failures: { retried: 'before the next model request', failRunAfter: MAX_COMPACTION_FAILURES },
      events: ['compaction_started', 'compaction_completed', 'compaction_failed'],
      providerNative: { ...NATIVE_STRATEGIES, used: false, why: NATIVE_NOT_USED },
    },
    // One policy for both kinds of run (src/engine/run/terminal.ts).
    exitCodes: {
      wallTime: 124,
      oomKilled: 137,
      sigint: 130,
      sigterm: 143,
      cannotStart: 125,
      // A run whose work had started, then another budget or a failure ended it.
      failedAfterStart: 1,
    },
    // The governance extension's mediator: every proposal decided outside the model.
    mediator: {
      decisions: [...DecisionValue.options],
      riskClasses: [...RiskClass.options],
      sideEffectClasses: [...SideEffectClass.options],
      policy: {
        profileKey: 'policy',
        match: ['tool', 'riskClass', 'sideEffectClass', 'mode', 'args'],
        tiers: ['cfh', 'profile', 'contract', 'defaults'],
        order: ['deny', 'ask', 'allow'],
        defaultDecision: 'deny',
        explain: 'cfh policy explain',
      },
      governanceRecord: { file: 'governance.jsonl', schema: 'cfh.governance/1' },
    },
  };
}

/** A profile's model route as configured: the credential by reference only. */
function routeOf(profile: Profile): Record<string, unknown> | null {
  const m = profile.model;
  if (m === undefined) return null;
  const credential =
    m.credential === undefined
      ? 'default'
      : m.credential === 'none'
        ? 'none'
        : `env:${m.credential.fromEnv}`;
  return {
    provider: m.provider,
    ...(m.baseUrl === undefined ? {} : { baseUrl: m.baseUrl }),
    ...(m.model === undefined ? {} : { model: m.model }),
    ...(m.provider === 'openai-compatible' ? { wire: m.wire ?? 'chat' } : {}),
    credential,
    ...(m.contextWindow === undefined ? {} : { contextWindow: m.contextWindow }),
    // A route without prices of its own is priced by the repository's rate card, where its
    // model is on it (an openai-compatible model is not: unpriced, never priced at a guess).
    pricing: m.pricing === undefined ? 'rate card' : { file: ROUTE_PRICING_FILE, ...m.pricing },
  };
}

/** What each child profile may do, resolved (AH-DEL-2: tools, host powers, posture, limits, returns). */
function describeChildren(profile: Profile): Record<string, unknown>[] {
  return resolveChildren(profile, profile.budgets.maxDelegationDepth).map((c) => {
    const p = c.loaded.profile;
    return {
      name: c.name,
      profile: p.name,
      description: p.description,
      tools: p.tools,
      hostTools: p.hostTools.map((t) => t.name),
      network: p.network.mode,
      workspace: p.workspace.mode,
      mounts: p.mounts.map((m) => ({ target: m.target, mode: m.mode })),
      limits: p.limits,
      budgets: p.budgets,
      // AH-DEL-1: a child's own route; null: the parent's answers it.
      modelRoute: p.model === undefined ? null : routeOf(p),
      returns: { maxChars: c.entry.returns.maxChars, schema: c.entry.returns.schema ?? null },
      ceiling: c.ceiling ?? null,
      maxParallel: c.entry.maxParallel,
      children: Object.keys(p.children),
    };
  });
}
