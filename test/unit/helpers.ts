// Shared helpers for the unit tests: catching a thrown CfhError and temp directories.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { identityOf } from '../../src/sandbox/mount-policy.js';
import type { SpecMount } from '../../src/substrate/container-spec.js';
import { BUILTIN_TOOLS, type BuiltinTool } from '../../src/tools/builtins.js';
import type { ToolExecution } from '../../src/tools/tool-container.js';
import type { ToolRunner } from '../../src/tools/runner.js';
import { Approvals } from '../../src/mediator/approvals.js';
import { Mediator } from '../../src/mediator/mediator.js';
import { Policy, type RunFacts } from '../../src/mediator/policy.js';
import { compilePolicy, type PolicyRule } from '../../src/mediator/policy-rule.js';

/** Runs `fn` and returns what it threw; fails the test if it returned normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw, but it returned');
}

/**
 * Asserts `fn` throws a ConfigError with `code` whose message contains every fragment.
 * Returns the error for further checks.
 */
export function expectConfigError(
  fn: () => unknown,
  code: string,
  ...fragments: string[]
): ConfigError {
  const error = thrownBy(fn);
  expect(error).toBeInstanceOf(ConfigError);
  const configError = error as ConfigError;
  expect(configError.code).toBe(code);
  expect(configError.boundary).toBe('configuration');
  for (const fragment of fragments) expect(configError.message).toContain(fragment);
  return configError;
}

/** A fresh directory under os.tmpdir(); remove it with `removeTempDir`. */
export function makeTempDir(prefix = 'cfh-unit-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

export async function removeTempDir(dir: string | undefined): Promise<void> {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}

/** Narrows away undefined, failing the test when the value is missing. */
export function must<T>(value: T | undefined | null, what = 'value'): T {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}

/**
 * A sandbox runner for unit tests: the built-in's own command and observation around a
 * fake execution, so the loop's tests see argv and stdin as the real runner makes them.
 */
export function runnerFrom(
  runTool: (
    tool: BuiltinTool,
    argv: string[],
    stdin: Buffer | undefined,
    signal: AbortSignal,
  ) => Promise<ToolExecution>,
  tools: readonly BuiltinTool[] = BUILTIN_TOOLS,
): ToolRunner {
  return {
    run: async (call, limit, signal) => {
      const tool = must(
        tools.find((t) => t.name === call.tool.name) ??
          BUILTIN_TOOLS.find((t) => t.name === call.tool.name),
        call.tool.name,
      );
      const { argv, stdin } = tool.command(call.args, { maxChars: limit, mounts: ['/workspace'] });
      const execution = await runTool(tool, argv, stdin, signal);
      return {
        observation: tool.observe(execution, call.args),
        stdout: execution.stdout,
        stderr: execution.stderr,
        exitCode: execution.exitCode,
        durationMs: execution.durationMs,
        where: execution.containerId,
        timedOut: execution.timedOut,
      };
    },
  };
}

/** A mediator with no profile rules (the defaults decide) and nobody to ask. */
export function testMediator(
  record: (type: string, data: Record<string, unknown>) => Promise<void>,
  facts: Partial<RunFacts> = {},
  rules: readonly PolicyRule[] = [],
  approvals: Approvals = new Approvals([]),
): Mediator {
  return new Mediator({
    policy: new Policy(compilePolicy(rules), {
      mode: 'run',
      workspaceMode: 'direct',
      network: 'disabled',
      rwMounts: true,
      fromPlan: false,
      ...facts,
    }),
    approvals,
    recorder: { event: record },
  });
}

/** A workspace directory as a checked mount, the way planning hands it on. */
export function workspaceMountOf(dir: string): SpecMount {
  return { source: dir, target: '/workspace', mode: 'ro', identity: identityOf(dir) };
}

/** A tool execution that succeeded, with `over` replacing what a test needs. */
export function execution(over: Partial<ToolExecution> = {}): ToolExecution {
  return {
    exitCode: 0,
    stdout: Buffer.from(JSON.stringify({ entries: ['a'] })),
    stderr: Buffer.alloc(0),
    stdoutTruncated: false,
    stderrTruncated: false,
    timedOut: false,
    durationMs: 1,
    containerId: 'fake',
    ...over,
  };
}
