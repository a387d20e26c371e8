// The command tree. Every option comes from a flag table (flags/): commander only binds it,
// readFlags parses what commander collected, and each action hands a typed request to its
// handler, which returns an exit code; this file records the code. Each handler's module is
// imported when its command runs, not before: a command loads only its own code (the audit,
// the report, the image builder, the patch tools are none of `sandbox run`'s business).

const commands = {
  sandboxRun: () => import('./commands/sandbox-run.js'),
  runsPatch: () => import('./commands/runs-patch.js'),
  profiles: () => import('./commands/profiles.js'),
  policy: () => import('./commands/policy.js'),
  ops: () => import('./commands/ops.js'),
  image: () => import('./commands/image.js'),
  runs: () => import('./commands/runs.js'),
  audit: () => import('./commands/audit.js'),
  keys: () => import('./commands/keys.js'),
  labels: () => import('./commands/labels.js'),
  runsReport: () => import('./commands/runs-report.js'),
  runsRetention: () => import('./commands/runs-retention.js'),
  serve: () => import('./commands/serve.js'),
  mcp: () => import('./commands/mcp.js'),
  sandboxResume: () => import('./commands/sandbox-resume.js'),
};

import { Command } from 'commander';
import { CFH_VERSION } from '../version.js';
import type { CliDeps } from './deps.js';
import { escapeText } from './terminal-text.js';
import { oneLineUsageErrors } from './usage-errors.js';
import { bindFlags, readFlags, type FlagTable, type FlagValues } from './flags/flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS } from './flags/run-flags.js';
import * as F from './flags/command-flags.js';
import { MCP_BUDGET_FLAGS, MCP_FLAGS } from './flags/mcp-flags.js';
import { RESUME_BUDGET_FLAGS, RESUME_FLAGS } from './flags/resume-flags.js';
type Code = number | Promise<number>;

export function buildProgram(deps: CliDeps, setExit: (code: number) => void): Command {
  const program = new Command('cfh')
    .description('Container-sandboxed execution for agents and untrusted code')
    .version(CFH_VERSION, '-V, --version')
    .enablePositionalOptions()
    // Before any subcommand is added, so they inherit it: usage errors are thrown to
    // main.ts (which maps them to exit codes), never process.exit() from inside commander.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => deps.printer.stdout.write(s),
      // Usage errors quote what was typed, which a script may have taken from a file.
      writeErr: (s) => deps.printer.stderr.write(escapeText(s)),
    });

  /** A leaf command with no positional argument. */
  const leaf = <T extends FlagTable>(
    cmd: Command,
    table: T,
    handler: (o: FlagValues<T>) => Code,
  ): void => {
    bindFlags(cmd, table).action(async (raw: Record<string, unknown>) => {
      setExit(await handler(readFlags(table, raw)));
    });
  };
  /** A leaf command with one positional argument (`runs show <runId>`). */
  const leaf1 = <T extends FlagTable>(
    cmd: Command,
    table: T,
    handler: (arg: string, o: FlagValues<T>) => Code,
  ): void => {
    bindFlags(cmd, table).action(async (arg: string, raw: Record<string, unknown>) => {
      setExit(await handler(arg, readFlags(table, raw)));
    });
  };

  const sandbox = program.command('sandbox').description('Run commands in hardened containers');
  const run = sandbox
    .command('run')
    .description('Run COMMAND in its own hardened container (write it after --)');
  bindFlags(bindFlags(run, RUN_FLAGS), BUDGET_RUN_FLAGS)
    .argument('[command...]', 'the command and its arguments')
    .passThroughOptions()
    .action(async (command: string[], raw: Record<string, unknown>) => {
      setExit(await (await commands.sandboxRun()).sandboxRunCommand(raw, command, deps));
    });
  // AH-ART-4/5: an ended agent run continued as a new run linked to it.
  bindFlags(
    bindFlags(
      sandbox
        .command('resume <runId>')
        .description('Continue an agent run that ended as a new run linked to it (narrowing only)'),
      RESUME_FLAGS,
    ),
    RESUME_BUDGET_FLAGS,
  ).action(async (runId: string, raw: Record<string, unknown>) => {
    setExit(await (await commands.sandboxResume()).sandboxResumeCommand(runId, raw, deps));
  });

  const profiles = program.command('profiles').description('Inspect profiles');
  leaf(profiles.command('list'), F.PROFILES_LIST_FLAGS, async (o) =>
    (await commands.profiles()).profilesListCommand(o, deps),
  );
  leaf1(
    profiles
      .command('show <name>')
      .description('Print a profile; --resolved adds the exact container spec it derives'),
    F.PROFILES_SHOW_FLAGS,
    async (name, o) => (await commands.profiles()).profilesShowCommand({ name, ...o }, deps),
  );

  const image = program.command('image').description('Sandbox and toolchain images');
  leaf(
    image
      .command('build')
      .description(
        "Build the sandbox image, a toolchain (--with/--packages), a Dockerfile image or a profile's image",
      ),
    F.IMAGE_BUILD_FLAGS,
    async (o) =>
      (await commands.ops()).imageBuildCommand(
        {
          ...o,
          method: o.offline ? 'offline' : o.method,
          buildArgs: o.buildArg,
        },
        deps,
      ),
  );
  leaf(
    image.command('ls').description('The images cfh built: tag, what from, size, created'),
    F.IMAGE_LS_FLAGS,
    async (o) => (await commands.image()).imageListCommand(o, deps),
  );
  const rm = image
    .command('rm')
    .description('Remove images cfh built (never another image)')
    .argument('[refs...]', 'image references (or --all)');
  bindFlags(rm, F.IMAGE_RM_FLAGS).action(async (refs: string[], raw: Record<string, unknown>) => {
    const o = readFlags(F.IMAGE_RM_FLAGS, raw);
    setExit(await (await commands.image()).imageRemoveCommand({ ...o, refs }, deps));
  });

  const explain = program
    .command('policy')
    .description("The mediator's policy")
    .command('explain <tool> <argsJson>')
    .description('Which rule decides a call of TOOL with ARGS_JSON, and why (runs nothing)');
  bindFlags(explain, F.POLICY_EXPLAIN_FLAGS).action(
    async (tool: string, argsJson: string, raw: Record<string, unknown>) => {
      const o = readFlags(F.POLICY_EXPLAIN_FLAGS, raw);
      setExit((await commands.policy()).policyExplainCommand({ ...o, tool, argsJson }, deps));
    },
  );

  leaf(
    program
      .command('capabilities')
      .description('Machine-readable capability description (needs no engine)'),
    F.CAPABILITIES_FLAGS,
    async (o) => (await commands.ops()).capabilitiesCommand({ profile: o.profile }, deps),
  );
  leaf(
    program.command('doctor').description('Check the engine, runtimes, images and limits'),
    F.DOCTOR_FLAGS,
    async (o) => (await commands.ops()).doctorCommand(o, deps),
  );
  leaf(
    program
      .command('reap')
      .description('Remove containers, networks and volumes of cfh processes that are gone'),
    F.REAP_FLAGS,
    async (o) => (await commands.ops()).reapCommand(o, deps),
  );

  const runs = program.command('runs').description('Read run evidence');
  leaf(runs.command('list'), F.RUNS_READ_FLAGS, async (o) =>
    (await commands.runs()).runsListCommand(o, deps),
  );
  leaf1(runs.command('show <runId>'), F.RUNS_READ_FLAGS, async (runId, o) =>
    (await commands.runs()).runsShowCommand({ runId, ...o }, deps),
  );
  leaf(
    runs
      .command('prune')
      .description('Remove run directories older than DURATION; never one still being written'),
    F.RUNS_PRUNE_FLAGS,
    async (o) => (await commands.runsRetention()).runsPruneCommand(o, deps),
  );
  leaf1(
    runs
      .command('export <runId>')
      .description('Write the run as OpenTelemetry spans (OTLP/JSON), digests and sizes only'),
    F.RUNS_EXPORT_FLAGS,
    async (runId, o) => (await commands.runsRetention()).runsExportCommand({ runId, ...o }, deps),
  );
  leaf1(
    runs
      .command('report <runId>')
      .description('Write the run as one self-contained HTML page (RUN_ID or RUN_DIR)'),
    F.RUNS_REPORT_FLAGS,
    async (runId, o) => (await commands.runsReport()).runsReportCommand({ runId, ...o }, deps),
  );

  leaf(
    program
      .command('keys')
      .description('Operator signing keys')
      .command('init')
      .description('Create the Ed25519 key pair that signs every run from now on'),
    F.KEYS_INIT_FLAGS,
    async (o) => (await commands.keys()).keysInitCommand(o, deps),
  );

  const labels = program
    .command('labels')
    .description('What runs wrote into host trees: the labels later runs mount them under');
  leaf(labels.command('list', { isDefault: true }), F.LABELS_FLAGS, async (o) =>
    (await commands.labels()).labelsListCommand(o, deps),
  );
  leaf1(
    labels
      .command('forget <path>')
      .description(
        'Forget what runs wrote into the tree at PATH (your word that it holds no more)',
      ),
    F.LABELS_FLAGS,
    async (p, o) => (await commands.labels()).labelsForgetCommand({ path: p, ...o }, deps),
  );

  const audit = program
    .command('audit [run]')
    .description("Verify a run's evidence and check it clause by clause (RUN_ID or RUN_DIR)");
  bindFlags(audit, F.AUDIT_FLAGS).action(
    async (runArg: string | undefined, raw: Record<string, unknown>) => {
      const o = readFlags(F.AUDIT_FLAGS, raw);
      setExit(await (await commands.audit()).auditCommand({ run: runArg, ...o }, deps));
    },
  );

  leaf1(
    runs
      .command('diff <runId>')
      .description('Print the patch a draft run left (unified diff; --json: the change list)'),
    F.RUNS_DIFF_FLAGS,
    async (runId, o) => (await commands.runsPatch()).runsDiffCommand({ runId, ...o }, deps),
  );
  leaf1(
    runs
      .command('apply <runId>')
      .description(
        "Apply a draft run's patch to the host workspace, all or nothing, once, after approval",
      ),
    F.RUNS_APPLY_FLAGS,
    async (runId, { '3way': threeWay, ...o }) =>
      (await commands.runsPatch()).runsApplyCommand({ runId, threeWay, ...o }, deps),
  );

  leaf(
    program
      .command('serve')
      .description('Interactive agent sessions over JSON-RPC on stdin/stdout (--stdio)'),
    F.SERVE_FLAGS,
    async (o) => (await commands.serve()).serveCommand(o, deps),
  );

  const mcp = program
    .command('mcp')
    .description(
      'Serve one sandboxed agent run to an MCP client on stdin/stdout (the client proposes, cfh decides and records)',
    );
  bindFlags(bindFlags(mcp, MCP_FLAGS), MCP_BUDGET_FLAGS).action(
    async (raw: Record<string, unknown>) => {
      setExit(await (await commands.mcp()).mcpCommand(raw, deps));
    },
  );

  // Once the tree is complete: every command's usage errors as one line (usage-errors.ts).
  oneLineUsageErrors(program);
  return program;
}
