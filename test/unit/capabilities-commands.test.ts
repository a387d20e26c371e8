// `cfh capabilities --json` lists every command the CLI has (AH-CAP-1): the description is
// written in the engine, the commands in the CLI, so this test keeps the two equal.
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import type { CliDeps } from '../../src/cli/deps.js';
import { describeCapabilities } from '../../src/engine/ops/capabilities.js';

/** Every leaf command's full name (`runs show`), the program's own name left out. */
function leaves(command: Command, prefix: string[] = []): string[] {
  if (command.commands.length === 0) return [prefix.join(' ')];
  return command.commands.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

describe('capabilities.commands', () => {
  it('names exactly the commands the CLI has', () => {
    // The program is only inspected, never run: nothing in deps is touched.
    const program = buildProgram({} as CliDeps, () => undefined);
    const described = describeCapabilities().commands as string[];
    expect([...described].sort()).toEqual(leaves(program).sort());
  });
});
