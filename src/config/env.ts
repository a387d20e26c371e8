// The one place cfh reads its environment. Nothing from here passes into a sandbox.
import os from 'node:os';
import path from 'node:path';

/**
 * The anthropic gateway's model when CFH_MODEL is unset: the current Sonnet in the installed
 * SDK's model list, not in its deprecation table (unit/model-lifecycle.test.ts checks both),
 * and priced on rate-cards/anthropic.json.
 */
export const DEFAULT_MODEL = 'claude-sonnet-5-5';

export interface CfhEnvironment {
  readonly artifactRoot: string;
  /**
   * The operator's key pair (`cfh keys init`): `CFH_KEY_DIR`, else `$XDG_CONFIG_HOME/cfh/keys`
   * (`~/.config/cfh/keys`). When its private key exists, every run's terminal record is signed.
   */
  readonly keyDir: string;
  readonly dockerHost: string | undefined;
  readonly logLevel: string;
  /** `host[:port]` of the DNS server the egress gateway asks; unset: the host's resolver. */
  readonly egressResolver: string | undefined;
  /** Issue 5: the anthropic gateway's credential. Passed to the gateway only, never recorded. */
  readonly anthropicApiKey: string | undefined;
  readonly anthropicBaseUrl: string | undefined;
  /** The anthropic gateway's model: CFH_MODEL, else DEFAULT_MODEL. */
  readonly model: string;
  /** CFH_MODEL as set (any provider's model when neither a flag nor the profile names one). */
  readonly modelOverride?: string | undefined;
  /** OPENAI_BASE_URL: the openai-compatible gateway's endpoint when no flag or profile names one. */
  readonly openaiBaseUrl?: string | undefined;
  /** Where draft copies of workspaces are made (CFH_DRAFT_ROOT, else the temp directory). */
  readonly draftRoot: string;
  /** The most a draft copy may hold (CFH_DRAFT_MAX_BYTES, a size; parsed at planning). */
  readonly draftMaxBytes: string | undefined;
  /** The most a draft's patch may keep (CFH_DRAFT_PATCH_MAX_BYTES, a size; parsed at planning). */
  readonly draftPatchMaxBytes?: string | undefined;
  /** Where host-tool process records go, for `cfh reap` (CFH_STATE_DIR/host-processes). */
  readonly hostProcessDir: string;
  /** What runs wrote into host trees, per tree (CFH_STATE_DIR/written-labels; cfc/written-store.ts). */
  readonly writtenLabelsDir: string;
  /**
   * The shell's name for the working directory (PWD), links as the operator typed them;
   * used only where it names the process's own working directory (AH-CONT-1: a `cd`
   * through a link a sandbox left is judged like a source spelled through it).
   */
  readonly workingDirectory?: string | undefined;
  /**
   * cfh's own environment: where a host tool's `fromEnv` credential is read, and only for
   * that tool's process (never a sandbox, never recorded).
   */
  readonly credentialSource: NodeJS.ProcessEnv;
}

export function readEnvironment(env: NodeJS.ProcessEnv = process.env): CfhEnvironment {
  const stateHome = nonEmpty(env.XDG_STATE_HOME) ?? path.join(os.homedir(), '.local', 'state');
  const configHome = nonEmpty(env.XDG_CONFIG_HOME) ?? path.join(os.homedir(), '.config');
  const stateDir = nonEmpty(env.CFH_STATE_DIR) ?? path.join(stateHome, 'cfh');
  return {
    artifactRoot: nonEmpty(env.CFH_ARTIFACT_ROOT) ?? path.join(stateHome, 'cfh', 'runs'),
    keyDir: nonEmpty(env.CFH_KEY_DIR) ?? path.join(configHome, 'cfh', 'keys'),
    dockerHost: nonEmpty(env.DOCKER_HOST),
    logLevel: nonEmpty(env.CFH_LOG_LEVEL) ?? 'warn',
    egressResolver: nonEmpty(env.CFH_EGRESS_RESOLVER),
    anthropicApiKey: nonEmpty(env.ANTHROPIC_API_KEY),
    anthropicBaseUrl: nonEmpty(env.ANTHROPIC_BASE_URL),
    model: nonEmpty(env.CFH_MODEL) ?? DEFAULT_MODEL,
    modelOverride: nonEmpty(env.CFH_MODEL),
    openaiBaseUrl: nonEmpty(env.OPENAI_BASE_URL),
    draftRoot: nonEmpty(env.CFH_DRAFT_ROOT) ?? nonEmpty(env.TMPDIR) ?? os.tmpdir(),
    draftMaxBytes: nonEmpty(env.CFH_DRAFT_MAX_BYTES),
    draftPatchMaxBytes: nonEmpty(env.CFH_DRAFT_PATCH_MAX_BYTES),
    hostProcessDir: path.join(stateDir, 'host-processes'),
    writtenLabelsDir: path.join(stateDir, 'written-labels'),
    workingDirectory: nonEmpty(env.PWD),
    credentialSource: env,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
