// The pure parts of the one error style (docs/operators.md, "Errors"): the one exit-status
// mapping, the `cfh: WHAT; HINT` line, commander's usage errors as one line, and which
// misspelt keys are named. The walk through bin/cfh is integration/error-style.test.ts.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { exitStatusOf, usageExitStatus } from '../../src/cli/exit-status.js';
import { failureLine } from '../../src/cli/report-failure.js';
import { commandPath, oneLineUsageErrors, usageLine } from '../../src/cli/usage-errors.js';
import { nearest } from '../../src/config/zod-issues.js';
import {
  ArtifactError,
  ConfigError,
  EngineUnavailableError,
  HarnessInvariantError,
  WorkspaceError,
} from '../../src/errors.js';

describe('one exit status per class', () => {
  const config = new ConfigError('unknown_run', 'no run');
  const engine = new EngineUnavailableError('engine_unreachable', 'down');
  it.each([
    [config, 'run', 125],
    [config, 'command', 2],
    [new ArtifactError('evidence_unreadable', 'x'), 'command', 2],
    [engine, 'run', 125],
    // 125 means "the sandbox could not start"; no other command starts one.
    [engine, 'command', 1],
    [new HarnessInvariantError('governance_invariant', 'x'), 'command', 1],
    [new WorkspaceError('apply_failed', 'x'), 'command', 1],
    [new ConfigError('key_exists', 'x'), 'command', 1],
    [new ArtifactError('run_locked', 'x'), 'command', 1],
    [new Error('not ours'), 'command', 1],
    [new Error('not ours'), 'run', 125],
  ] as const)('%s on %s: %d', (error, surface, status) => {
    expect(exitStatusOf(error, surface)).toBe(status);
  });

  it('usage errors: 125 for sandbox run, 2 elsewhere', () => {
    expect(usageExitStatus('run')).toBe(125);
    expect(usageExitStatus('command')).toBe(2);
  });
});

describe('the failure line', () => {
  it('WHAT; HINT on one line, line breaks of any message folded', () => {
    expect(failureLine(new ConfigError('unknown_run', 'no run', {}, 'cfh runs list'))).toBe(
      'cfh: no run; cfh runs list',
    );
    expect(failureLine(new Error('first\n  second\r\nthird'))).toBe('cfh: first second third');
    expect(failureLine(new ConfigError('invalid_size', 'a\nb', {}, 'c\n\nd'))).toBe(
      'cfh: a b; c d',
    );
  });
});

describe("commander's usage errors as one line", () => {
  it.each([
    [
      "error: unknown option '--memroy'\n(Did you mean --memory?)\n",
      "cfh: unknown option '--memroy'; did you mean --memory? (cfh sandbox run --help)",
    ],
    [
      "error: unknown option '--zz'\n",
      "cfh: unknown option '--zz'; cfh sandbox run --help lists the options",
    ],
    [
      "error: unknown command 'x'\n",
      "cfh: unknown command 'x'; cfh sandbox run --help lists the commands",
    ],
    [
      "error: option '--network <mode>' argument 'b' is invalid. Allowed choices are disabled, open.\n",
      "cfh: option '--network <mode>' argument 'b' is invalid; allowed choices are disabled, open (cfh sandbox run --help)",
    ],
    [
      "error: missing required argument 'runId'\n",
      "cfh: missing required argument 'runId'; cfh sandbox run --help",
    ],
    // A `;` typed by the user cannot split WHAT from HINT.
    [
      "error: unknown option '--a;b'\n",
      "cfh: unknown option '--a,b'; cfh sandbox run --help lists the options",
    ],
  ])('%j', (message, line) => {
    expect(usageLine(message, 'cfh sandbox run')).toBe(line);
  });

  it('applies to every command of a tree, help after an error off', async () => {
    const written: string[] = [];
    const root = new Command('cfh')
      .exitOverride()
      .showHelpAfterError()
      .configureOutput({ writeErr: (s) => written.push(s), writeOut: (s) => written.push(s) });
    const runs = root.command('runs');
    const show = runs.command('show <runId>').option('--json');
    show.action(() => undefined);
    oneLineUsageErrors(root);
    expect(commandPath(show)).toBe('cfh runs show');
    await expect(
      root.parseAsync(['runs', 'show', 'x', '--jsno'], { from: 'user' }),
    ).rejects.toThrow();
    expect(written).toEqual([
      "cfh: unknown option '--jsno'; did you mean --json? (cfh runs show --help)\n",
    ]);
  });
});

describe('which unknown keys are named: only those within two edits of a known one', () => {
  const known = ['network', 'memory', 'mode', 'env', 'name', 'limits'];
  it.each([
    ['netwrk', 'network'],
    ['memroy', 'memory'],
    ['mdoe', 'mode'],
    ['Network', 'network'],
    ['nmae', 'name'],
    ['limit', 'limits'],
  ])('%s -> %s', (key, suggestion) => {
    expect(nearest(key, known)).toBe(suggestion);
  });
  it.each([['AKIAIOSFODNN7EXAMPLE'], ['xyz'], ['ev'.repeat(40)], ['pass'], ['key']])(
    '%s: no suggestion, so never quoted',
    (key) => {
      expect(nearest(key, known)).toBeUndefined();
    },
  );
});
