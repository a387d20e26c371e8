// The one builder of a run's dependencies, for the command run and the agent run alike: the
// engine client, the logger, the owner identity, the egress resolver, the operator's signer,
// the host-process ledger and the draft root the start-up sweep reaps (`cfh reap` too), and
// the cancellation signal. Built in one place so the two paths cannot drift: a command run
// sweeps the host-tool processes a killed agent run left, as an agent run does (AH-LIFE-3).
import { loadOperatorSigner } from '../evidence/signing.js';
import type { RunDeps } from '../engine/run/run-session.js';
import type { OwnerIdentity } from '../sandbox/owner.js';
import type { CliDeps } from './deps.js';

export interface BuiltRun {
  readonly deps: RunDeps;
  /** Aborted on SIGINT/SIGTERM: the run's cancellation. */
  readonly signal: AbortSignal;
}

/** `owner`: the identity the run was planned under (its labels and lock name it). */
export async function buildRunDeps(cli: CliDeps, owner: OwnerIdentity): Promise<BuiltRun> {
  return {
    deps: {
      runtime: cli.runtime(),
      logger: cli.logger,
      owner,
      egressResolver: cli.env.egressResolver,
      signer: await loadOperatorSigner(cli.env.keyDir),
      hostProcessDir: cli.env.hostProcessDir,
      draftRoot: cli.env.draftRoot,
      writtenLabelsDir: cli.env.writtenLabelsDir,
    },
    signal: cli.signal,
  };
}
