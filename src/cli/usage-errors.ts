// Usage errors (an unknown option or command, a missing argument, a value outside the
// choices) in the one error style (docs/operators.md, "Errors"): ONE line on stderr,
// `cfh: WHAT; HINT`, the hint commander's suggestion and a pointer to the command's own
// `--help`, never the help itself. Applied to the built command tree, every command.
import type { Command } from 'commander';

/** `cfh runs show`: the words that name a command, as typed. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Commander's error text (`error: unknown option '--memroy'\n(Did you mean --memory?)`) as
 * one line: `unknown option '--memroy'; did you mean --memory? (cfh sandbox run --help)`.
 */
export function usageLine(message: string, path: string): string {
  const lines = message
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const first = (lines[0] ?? 'usage error').replace(/^error:\s*/i, '');
  // `… is invalid. Allowed choices are a, b.`: the first sentence is WHAT, the rest a hint.
  const split = /^(.+?)\.\s+(\S.*)$/.exec(first);
  const what = (split?.[1] ?? first).replace(/[.;]+$/, '').replace(/;/g, ',');
  const more = split?.[2]?.replace(/\.$/, '');
  const suggestion = /^\(Did you mean (.+)\?\)$/.exec(lines.slice(1).join(' '))?.[1];
  const help = `${path} --help`;
  let hint: string;
  if (suggestion !== undefined) hint = `did you mean ${suggestion}? (${help})`;
  else if (more !== undefined) hint = `${more.charAt(0).toLowerCase()}${more.slice(1)} (${help})`;
  else if (/^unknown option/.test(what)) hint = `${help} lists the options`;
  else if (/^unknown command/.test(what)) hint = `${help} lists the commands`;
  else hint = help;
  return `cfh: ${what}; ${hint}`;
}

/** Every command of the tree: errors as one line, suggestions on, no help after an error. */
export function oneLineUsageErrors(root: Command): void {
  const visit = (command: Command): void => {
    command
      .showHelpAfterError(false)
      .showSuggestionAfterError(true)
      .configureOutput({
        outputError: (text, write) => {
          write(`${usageLine(text, commandPath(command))}\n`);
        },
      });
    for (const sub of command.commands) visit(sub);
  };
  visit(root);
}
