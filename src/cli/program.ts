// The command tree. Each action delegates to a handler that returns an exit code; this
// file only parses (commander) and records the code.
import { Command, Option } from 'commander';
import { CFH_VERSION } from '../version.js';
import type { CliDeps } from './deps.js';
import { escapeText } from './terminal-text.js';
import { BUDGET_FLAGS } from '../config/budget-flags.js';
import { sandboxRunCommand } from './commands/sandbox-run.js';
import { runsApplyCommand, runsDiffCommand } from './commands/runs-patch.js';
import { profilesListCommand, profilesShowCommand } from './commands/profiles.js';
import { policyExplainCommand } from './commands/policy.js';
import {
  capabilitiesCommand,
  doctorCommand,
  imageBuildCommand,
  reapCommand,
} from './commands/ops.js';
import { runsListCommand, runsShowCommand } from './commands/runs.js';
import { auditCommand } from './commands/audit.js';
import { keysInitCommand } from './commands/keys.js';
import { runsReportCommand } from './commands/runs-report.js';
import { runsExportCommand, runsPruneCommand } from './commands/runs-retention.js';

/** The budget flags given, by budget field (commander camel-cases `--max-model-turns`). */
function budgetOverrides(o: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const b of BUDGET_FLAGS) {
    const key = b.flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
    const value = o[key];
    if (typeof value === 'string') out[b.field] = value;
  }
  return out;
}

export function buildProgram(deps: CliDeps, setExit: (code: number) => void): Command {
  const program = new Command('cfh')
    .description('Container-sandboxed execution for agents and untrusted code')
    .version(CFH_VERSION, '-V, --version')
    .enablePositionalOptions()
    .showHelpAfterError()
    // Before any subcommand is added, so they inherit it: usage errors are thrown to
    // main.ts (which maps them to exit codes), never process.exit() from inside commander.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.printer.stdout.write(s),
      // Usage errors quote what was typed, which a script may have taken from a file.
      writeErr: (s) => deps.printer.stderr.write(escapeText(s)),
    });

  const collect = (value: string, prev: string[]): string[] => [...prev, value];
  const sandbox = program.command('sandbox').description('Run commands in hardened containers');
  const run = sandbox
    .command('run')
    .description('Run COMMAND in its own hardened container (write it after --)')
    .option('--profile <name|file>', 'built-in profile name or profile file', 'default')
    .option(
      '--workspace <dir>',
      'host directory mounted at /workspace (default: current directory)',
    )
    .addOption(
      new Option(
        '--workspace-mode <mode>',
        "ro, rw, or draft: work on a copy and leave a patch for `cfh runs apply` (default: the profile's)",
      ).choices(['ro', 'rw', 'draft']),
    )
    .option(
      '--mount <src:dst[:ro|:rw]>',
      'extra bind mount, read-only unless :rw (repeatable)',
      collect,
      [],
    )
    .option('--timeout <seconds>', 'wall-time limit in seconds')
    .option('--memory <size>', 'memory limit, e.g. 512m or 2g')
    .option('--cpus <n>', 'CPU limit, e.g. 0.5 or 2')
    .option('--pids <n>', 'process limit')
    .addOption(new Option('--runtime <runtime>', 'container runtime').choices(['runc', 'runsc']))
    .addOption(
      new Option('--network <mode>', "network posture (default: the profile's)").choices([
        'disabled',
        'allowlist',
        'open',
      ]),
    )
    .option(
      '--allow <dest>',
      'allow egress to DEST: host, host:port, *.domain, ip, ip/prefix (repeatable)',
      collect,
      [],
    )
    .option('--deny <dest>', 'deny egress to DEST; deny wins over allow (repeatable)', collect, [])
    .option(
      '--artifact-root <dir>',
      'where run directories go (default: $CFH_ARTIFACT_ROOT or ~/.local/state/cfh/runs)',
    )
    .option('--json', 'capture output and print one JSON result', false)
    .option('--prompt <text>', 'agent run: the direct command to the model (instead of COMMAND)')
    .option('--context <file>', 'agent run: context material (repeatable)', collect, [])
    .option(
      '--quote <file>',
      'agent run: quoted or retrieved material, never instructions (repeatable)',
      collect,
      [],
    )
    .option('--script <file>', 'agent run: replay model turns from FILE (the scripted gateway)')
    .addOption(
      new Option('--provider <name>', 'agent run: model gateway').choices([
        'scripted',
        'anthropic',
      ]),
    )
    .addOption(
      new Option(
        '--tool-lifetime <lifetime>',
        "agent run: tool containers (default: the profile's)",
      ).choices(['per-run', 'per-call']),
    )
    .option('--tool-timeout <seconds>', "agent run: cap every tool's timeout")
    .option('--plan', 'agent run: planning mode (every change denied; the answer kept as plan.md)')
    .option(
      '--from-plan <runId>',
      'agent run: execute the plan of a completed planning run (as context; risky calls ask)',
    )
    .option(
      '--approve <ruleId>',
      'agent run: approve every call this policy rule asks about, for this run (repeatable)',
      collect,
      [],
    )
    .option(
      '--approvals <file>',
      'agent run: YAML list of exact calls approved {rule, tool, argsDigest}',
    )
    .option('--non-interactive', 'agent run: never prompt for approval, even on a terminal');
  for (const b of BUDGET_FLAGS) run.option(`--${b.flag} <n>`, `agent run budget: ${b.help}`);
  run
    .argument('[command...]', 'the command and its arguments')
    .passThroughOptions()
    .action(async (command: string[], o: Record<string, unknown>) => {
      setExit(
        await sandboxRunCommand(
          {
            profile: o.profile as string,
            workspace: o.workspace as string | undefined,
            workspaceMode: o.workspaceMode as string | undefined,
            mounts: o.mount as string[],
            timeout: o.timeout as string | undefined,
            memory: o.memory as string | undefined,
            cpus: o.cpus as string | undefined,
            pids: o.pids as string | undefined,
            runtime: o.runtime as string | undefined,
            network: o.network as string | undefined,
            allow: o.allow as string[],
            deny: o.deny as string[],
            artifactRoot: o.artifactRoot as string | undefined,
            json: o.json === true,
            command,
            prompt: o.prompt as string | undefined,
            context: o.context as string[],
            quote: o.quote as string[],
            script: o.script as string | undefined,
            provider: o.provider as string | undefined,
            toolLifetime: o.toolLifetime as string | undefined,
            toolTimeout: o.toolTimeout as string | undefined,
            plan: o.plan === true,
            fromPlan: o.fromPlan as string | undefined,
            approve: o.approve as string[],
            approvals: o.approvals as string | undefined,
            nonInteractive: o.nonInteractive === true,
            budgets: budgetOverrides(o),
          },
          deps,
        ),
      );
    });

  const profiles = program.command('profiles').description('Inspect profiles');
  profiles
    .command('list')
    .option('--json', 'machine-readable', false)
    .action((o: { json: boolean }) => {
      setExit(profilesListCommand(o, deps));
    });
  profiles
    .command('show <name>')
    .description('Print a profile; --resolved adds the exact container spec it derives')
    .option('--resolved', 'resolve extends and derive the container spec', false)
    .option('--workspace <dir>', 'workspace to derive the spec for (default: current directory)')
    .option(
      '--seccomp-out <file>',
      'write the derived seccomp filter (the exact engine JSON) to FILE',
    )
    .action((name: string, o: { resolved: boolean; workspace?: string; seccompOut?: string }) => {
      setExit(
        profilesShowCommand(
          { name, resolved: o.resolved, workspace: o.workspace, seccompOut: o.seccompOut },
          deps,
        ),
      );
    });

  program
    .command('image')
    .description('Sandbox images')
    .command('build')
    .description('Build the sandbox image from images/sandbox/recipe.json')
    .option(
      '--method <auto|offline|pull>',
      'auto tries a registry, then builds offline from Debian packages',
      'auto',
    )
    .option('--offline', 'same as --method offline')
    .option('--force', 'rebuild even when the content tag is present', false)
    .option('--json', 'machine-readable', false)
    .action(async (o: { method: string; offline?: boolean; force: boolean; json: boolean }) => {
      setExit(
        await imageBuildCommand(
          { method: o.offline === true ? 'offline' : o.method, force: o.force, json: o.json },
          deps,
        ),
      );
    });

  program
    .command('policy')
    .description("The mediator's policy")
    .command('explain <tool> <argsJson>')
    .description('Which rule decides a call of TOOL with ARGS_JSON, and why (runs nothing)')
    .option('--profile <name|file>', 'built-in profile name or profile file', 'default')
    .option('--plan', 'as in planning mode', false)
    .option('--from-plan', 'as in a run executing an approved plan', false)
    .option('--workspace-mode <mode>', 'direct or draft')
    .option('--json', 'machine-readable', false)
    .action(
      (
        tool: string,
        argsJson: string,
        o: {
          profile: string;
          plan: boolean;
          fromPlan: boolean;
          workspaceMode?: string;
          json: boolean;
        },
      ) => {
        setExit(
          policyExplainCommand(
            {
              profile: o.profile,
              tool,
              argsJson,
              plan: o.plan,
              fromPlan: o.fromPlan,
              workspaceMode: o.workspaceMode,
              json: o.json,
            },
            deps,
          ),
        );
      },
    );

  program
    .command('capabilities')
    .description('Machine-readable capability description (needs no engine)')
    .option('--json', 'JSON (the only format)', true)
    .option('--profile <name|file>', "also list the profile's host tools and their authority")
    .action((o: { profile?: string }) => {
      setExit(capabilitiesCommand({ profile: o.profile }, deps));
    });

  program
    .command('doctor')
    .description('Check the engine, runtimes, images and limits')
    .option('--json', 'machine-readable', false)
    .option('--profile <name|file>', "also check the profile's host tools (starts each one)")
    .action(async (o: { json: boolean; profile?: string }) => {
      setExit(await doctorCommand(o, deps));
    });

  program
    .command('reap')
    .description('Remove containers, networks and volumes of cfh processes that are gone')
    .option('--dry-run', 'list what would be removed', false)
    .option('--run <runId>', "only this run's objects (repeatable)", collect, [])
    .option('--json', 'machine-readable', false)
    .action(async (o: { dryRun: boolean; json: boolean; run: string[] }) => {
      setExit(await reapCommand(o, deps));
    });

  const runs = program.command('runs').description('Read run evidence');
  runs
    .command('list')
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(async (o: { json: boolean; artifactRoot?: string }) => {
      setExit(await runsListCommand(o, deps));
    });
  runs
    .command('show <runId>')
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(async (runId: string, o: { json: boolean; artifactRoot?: string }) => {
      setExit(await runsShowCommand({ runId, ...o }, deps));
    });
  runs
    .command('prune')
    .description('Remove run directories older than DURATION; never one still being written')
    .option('--older-than <duration>', 'age, from the run id: 90s, 30m, 12h, 7d, 2w')
    .option('--keep <n>', 'always keep the N newest runs')
    .option('--dry-run', 'list what would be removed', false)
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(
      async (o: {
        olderThan?: string;
        keep?: string;
        dryRun: boolean;
        json: boolean;
        artifactRoot?: string;
      }) => {
        setExit(await runsPruneCommand(o, deps));
      },
    );
  runs
    .command('export <runId>')
    .description('Write the run as OpenTelemetry spans (OTLP/JSON), digests and sizes only')
    .option('--format <format>', 'otlp-json', 'otlp-json')
    .option('--out <file>', 'where to write it (default: ./RUN_ID.otlp.json)')
    .option('--artifact-root <dir>', 'artifact root')
    .action(async (runId: string, o: { format: string; out?: string; artifactRoot?: string }) => {
      setExit(await runsExportCommand({ runId, ...o }, deps));
    });
  runs
    .command('report <runId>')
    .description('Write the run as one self-contained HTML page (RUN_ID or RUN_DIR)')
    .option('--out <file>', 'where to write it (default: ./RUN_ID.html)')
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(async (runId: string, o: { out?: string; artifactRoot?: string; json: boolean }) => {
      setExit(await runsReportCommand({ runId, ...o }, deps));
    });

  program
    .command('keys')
    .description('Operator signing keys')
    .command('init')
    .description('Create the Ed25519 key pair that signs every run from now on')
    .option('--json', 'machine-readable', false)
    .action(async (o: { json: boolean }) => {
      setExit(await keysInitCommand(o, deps));
    });

  program
    .command('audit [run]')
    .description("Verify a run's evidence and check it clause by clause (RUN_ID or RUN_DIR)")
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .option('--strict', 'a warn or an inconclusive check fails too', false)
    .option('--expected <file>', 'expected-failures ledger (conformance/expected-failures.yaml)')
    .option('--public-key <file>', "the operator's public key (default: the key directory's)")
    .option('--manifest', 'print the conformance manifest reconciled with the checks', false)
    .option('--markdown', 'with --manifest: the table docs/conformance.md holds', false)
    .action(async (run: string | undefined, o: Record<string, unknown>) => {
      setExit(
        await auditCommand(
          {
            run,
            json: o.json === true,
            strict: o.strict === true,
            manifest: o.manifest === true,
            markdown: o.markdown === true,
            expected: o.expected as string | undefined,
            publicKey: o.publicKey as string | undefined,
            artifactRoot: o.artifactRoot as string | undefined,
          },
          deps,
        ),
      );
    });

  runs
    .command('diff <runId>')
    .description('Print the patch a draft run left (unified diff; --json: the change list)')
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(async (runId: string, o: { json: boolean; artifactRoot?: string }) => {
      setExit(await runsDiffCommand({ runId, ...o }, deps));
    });
  runs
    .command('apply <runId>')
    .description(
      "Apply a draft run's patch to the host workspace, all or nothing, once, after approval",
    )
    .option('--yes', 'approve without a prompt (recorded as the approval surface)', false)
    .option('--artifact-root <dir>', 'artifact root')
    .option('--json', 'machine-readable', false)
    .action(async (runId: string, o: { yes: boolean; json: boolean; artifactRoot?: string }) => {
      setExit(await runsApplyCommand({ runId, ...o }, deps));
    });

  return program;
}
