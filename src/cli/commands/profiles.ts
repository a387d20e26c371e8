// `cfh profiles list` and `cfh profiles show NAME [--resolved]`.
import { closeSync, constants, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { ConfigError, errorMessage } from '../../errors.js';
import { listBuiltinProfiles, loadProfile } from '../../config/profile-loader.js';
import { resolveChildren } from '../../config/child-profiles.js';
import { snapshotCfc } from '../../engine/cfc/cfc-plan.js';
import { planSandboxRun } from '../../engine/run/run-plan.js';
import { effectivePolicy, runFactsOf } from '../../engine/ops/policy-explain.js';
import { toCreateOptions } from '../../substrate/docker/adapter.js';
import { describeSpec } from '../../substrate/container-spec.js';
import { currentOwner } from '../../sandbox/owner.js';
import { currentHostIdentity } from '../../sandbox/sandbox-user.js';
import type { CliDeps } from '../deps.js';
import { reportFailure } from '../report-failure.js';

export function profilesListCommand(args: { json: boolean }, deps: CliDeps): number {
  try {
    const rows = listBuiltinProfiles().map((name) => {
      const { profile } = loadProfile(name);
      return {
        name,
        description: profile.description,
        runtime: profile.runtime,
        workspace: profile.workspace.mode,
        network: profile.network.mode,
      };
    });
    if (args.json) deps.printer.json(rows);
    else for (const r of rows) deps.printer.out(`${r.name.padEnd(16)} ${r.description}`);
    return 0;
  } catch (error) {
    return reportFailure(error, deps, { json: args.json });
  }
}

/**
 * --seccomp-out: a regular file (created or replaced), never a FIFO or device. Opened
 * O_NONBLOCK, so a FIFO with no reader fails at once (ENXIO) instead of blocking cfh, deaf
 * to signals, in a synchronous open.
 */
function writeSeccompOut(file: string, json: string): void {
  let fd: number;
  try {
    fd = openSync(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOCTTY,
      0o644,
    );
  } catch (error) {
    throw new ConfigError(
      'seccomp_out_unwritable',
      `--seccomp-out: cannot write '${file}': ${errorMessage(error)}`,
      {
        field: '--seccomp-out',
        value: file,
      },
    );
  }
  try {
    const fstat = fstatSync(fd);
    if (!fstat.isFile()) {
      throw new ConfigError(
        'seccomp_out_unwritable',
        `--seccomp-out: '${file}' is not a regular file`,
        {
          field: '--seccomp-out',
          value: file,
        },
      );
    }
    ftruncateSync(fd, 0);
    writeSync(fd, json);
  } finally {
    closeSync(fd);
  }
}

export function profilesShowCommand(
  args: {
    name: string;
    resolved: boolean;
    workspace?: string | undefined;
    seccompOut?: string | undefined;
  },
  deps: CliDeps,
): number {
  try {
    const loaded = loadProfile(args.name);
    if (!args.resolved && args.seccompOut === undefined) {
      deps.printer.json({ sources: loaded.sources, profile: loaded.profile });
      return 0;
    }
    // The exact container spec this profile derives for a run in the workspace.
    const plan = planSandboxRun(
      { profile: args.name, workspace: args.workspace, command: ['<command>'], describing: true },
      deps.env,
      currentHostIdentity(),
      currentOwner(),
    );
    const request = toCreateOptions(plan.spec);
    const hostConfig = {
      ...request.HostConfig,
      SecurityOpt: [`no-new-privileges:true`, `seccomp=<sha256:${plan.spec.seccomp.sha256}>`],
    };
    if (args.seccompOut !== undefined) writeSeccompOut(args.seccompOut, plan.spec.seccomp.json);
    deps.printer.json({
      seccomp: {
        sha256: plan.spec.seccomp.sha256,
        source: plan.spec.seccomp.source,
        grants: plan.spec.seccomp.grants,
        ...(args.seccompOut === undefined ? {} : { writtenTo: args.seccompOut }),
      },
      profile: plan.profile,
      sources: plan.profileSources,
      digest: plan.profileDigest,
      containerSpec: describeSpec(plan.spec),
      // Draft: a run mounts its private copy at /workspace (rw) in place of the host
      // workspace shown here read-only; the copy is made when the run starts.
      workspaceMode: plan.workspaceMode,
      engineRequest: { ...request, HostConfig: hostConfig },
      // The rules the mediator applies for this profile, tier by tier (docs/operators.md).
      policy: effectivePolicy(plan.profile, runFactsOf(plan.profile)),
      // CFC (AH-CFC-2/10/14): each source's label, the mounts withheld from exec's container,
      // what enforce-strict would refuse, as snapshot.cfc records them for a run.
      cfc: snapshotCfc(plan.cfc, plan.profile.cfc.mode, null),
      // AH-DEL-2: each child profile as its runs would have it (its own layers, its ceiling
      // applied), with what delegation adds.
      children: resolveChildren(plan.profile, plan.profile.budgets.maxDelegationDepth).map((c) => ({
        name: c.name,
        sources: c.loaded.sources,
        profile: c.loaded.profile,
        returns: c.entry.returns,
        ceiling: c.ceiling ?? null,
        maxParallel: c.entry.maxParallel,
      })),
    });
    return 0;
  } catch (error) {
    // No --json: a refusal is the one line on stderr, never a JSON document on stdout.
    return reportFailure(error, deps, { json: false });
  }
}
