// The flag table is the one place a flag is declared: these tests read flags through the
// same commander binding the CLI uses, and check the typed requests built from them.
import { describe, expect, it } from 'vitest';
import { Command } from 'commander';
import { bindFlags, givenFlags, longName } from '../../src/cli/flags/flag.js';
import { BUDGET_RUN_FLAGS, RUN_FLAGS } from '../../src/cli/flags/run-flags.js';
import { runRequestOf } from '../../src/cli/flags/run-request.js';
import { buildProgram } from '../../src/cli/program.js';
import type { CliDeps } from '../../src/cli/deps.js';
import { CfhError } from '../../src/errors.js';

function parseRun(argv: string[]): { raw: Record<string, unknown>; command: string[] } {
  const cmd = new Command('run').exitOverride().passThroughOptions();
  bindFlags(bindFlags(cmd, RUN_FLAGS), BUDGET_RUN_FLAGS);
  let command: string[] = [];
  cmd.argument('[command...]').action((c: string[]) => {
    command = c;
  });
  cmd.parse(argv, { from: 'user' });
  return { raw: cmd.opts(), command };
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return e instanceof CfhError ? `${e.code}: ${e.message}` : String(e);
  }
  return undefined;
}

describe('flag table', () => {
  it('binds every command without a key that commander would read under another name', () => {
    expect(() => buildProgram({} as CliDeps, () => undefined)).not.toThrow();
  });

  it('refuses a key that is not commander’s name for the flag', () => {
    const bad = { memoryLimit: RUN_FLAGS.memory };
    expect(() => bindFlags(new Command(), bad)).toThrow(/read as 'memory'/);
  });

  it('declares each long flag of sandbox run once', () => {
    const names = [...Object.values(RUN_FLAGS), ...Object.values(BUDGET_RUN_FLAGS)].map(longName);
    expect(new Set(names).size).toBe(names.length);
  });

  it('builds a typed command request: lists default to [], switches to false', () => {
    const { raw, command } = parseRun(['--memory', '1g', '--mount', 'a:/a', '--', 'make', '-j2']);
    const request = runRequestOf(raw, command);
    expect(request).toMatchObject({
      kind: 'command',
      command: ['make', '-j2'],
      memory: '1g',
      mounts: ['a:/a'],
      allow: [],
      json: false,
      profile: 'default',
    });
  });

  it('builds a typed agent request with its budgets by field', () => {
    const { raw, command } = parseRun(['--prompt', 'fix it', '--max-model-turns', '3', '--plan']);
    const request = runRequestOf(raw, command);
    expect(request.kind).toBe('agent');
    if (request.kind !== 'agent') return;
    expect(request.prompt).toBe('fix it');
    expect(request.plan).toBe(true);
    expect(request.budgets).toEqual({ maxModelTurns: '3' });
  });

  it('refuses every agent flag given to a command run, naming them all', () => {
    const { raw, command } = parseRun(['--plan', '--max-tool-calls', '2', '--', 'true']);
    expect(givenFlags(RUN_FLAGS, raw)).toEqual(['--plan']);
    expect(codeOf(() => runRequestOf(raw, command))).toBe(
      'agent_option_without_prompt: --plan, --max-tool-calls: only for agent runs; give --prompt TEXT',
    );
  });

  it('refuses a command flag given to an agent run, with the flag’s own hint', () => {
    const { raw, command } = parseRun(['--prompt', 'x', '--timeout', '5']);
    expect(codeOf(() => runRequestOf(raw, command))).toMatch(
      /^command_option_with_prompt: --timeout: not for agent runs; use --max-wall-time-seconds/,
    );
  });

  it('refuses a prompt and a command together', () => {
    const { raw, command } = parseRun(['--prompt', 'x', '--', 'true']);
    expect(codeOf(() => runRequestOf(raw, command))).toMatch(/^prompt_and_command:/);
  });
});
