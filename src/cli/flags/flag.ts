// One flag, declared once: its spelling, help text, the zod schema its raw value is read
// with, and, for `sandbox run`, which run kind it lands in. commander only binds it: it
// collects strings (and booleans for switches); readFlags parses them into a typed object,
// so no handler ever casts commander's `Record<string, unknown>`.
import { Option, type Command } from 'commander';
import { z } from 'zod';

/** Which run kind of `sandbox run` a flag belongs to; other commands use `any`. */
export type FlagLanding = 'any' | 'command' | 'agent';

export interface FlagDef<S extends z.ZodType = z.ZodType> {
  /** commander's spelling: `--memory <size>`, `-i, --interactive`. */
  readonly spec: string;
  readonly help: string;
  readonly schema: S;
  readonly choices?: readonly string[] | undefined;
  /** Repeatable: every occurrence is kept, in order (default `[]`). */
  readonly repeatable?: boolean | undefined;
  /** A default commander shows in `--help` and fills in. */
  readonly defaultValue?: string | boolean | undefined;
  readonly lands?: FlagLanding | undefined;
  /** Said when the flag is given to the run kind it does not land in. */
  readonly hint?: string | undefined;
}

export type FlagTable = Readonly<Record<string, FlagDef>>;

export type FlagValues<T extends FlagTable> = { readonly [K in keyof T]: z.output<T[K]['schema']> };

/** A value flag: `--memory <size>`, absent is `undefined`. */
export function valueFlag(
  spec: string,
  help: string,
  extra: Partial<Pick<FlagDef, 'choices' | 'lands' | 'hint'>> = {},
): FlagDef<z.ZodOptional<z.ZodString>> {
  return { spec, help, schema: z.string().optional(), ...extra };
}

/** A value flag with a default: `--profile <name|file>` (`default`). */
export function defaultedFlag(
  spec: string,
  help: string,
  defaultValue: string,
  extra: Partial<Pick<FlagDef, 'choices' | 'lands' | 'hint'>> = {},
): FlagDef<z.ZodString> {
  return { spec, help, schema: z.string(), defaultValue, ...extra };
}

/** A repeatable value flag: `--mount <src:dst>` given any number of times. */
export function listFlag(
  spec: string,
  help: string,
  extra: Partial<Pick<FlagDef, 'lands' | 'hint'>> = {},
): FlagDef<z.ZodArray<z.ZodString>> {
  return { spec, help, schema: z.array(z.string()), repeatable: true, ...extra };
}

/** A switch: `--json`; absent is `false`. */
export function switchFlag(
  spec: string,
  help: string,
  extra: Partial<Pick<FlagDef, 'lands' | 'hint'>> = {},
): FlagDef<z.ZodBoolean> {
  return { spec, help, schema: z.boolean(), defaultValue: false, ...extra };
}

const collect = (value: string, prev: readonly string[]): string[] => [...prev, value];

/** The commander Option of a flag, and the key its value is read under. */
export function optionOf(def: FlagDef): Option {
  const option = new Option(def.spec, def.help);
  if (def.choices !== undefined) option.choices(def.choices);
  if (def.repeatable === true) option.argParser(collect).default([]);
  else if (def.defaultValue !== undefined) option.default(def.defaultValue);
  return option;
}

/** Adds every flag of the table to the command; a key must be commander's own name for it. */
export function bindFlags(command: Command, table: FlagTable): Command {
  for (const [key, def] of Object.entries(table)) {
    const option = optionOf(def);
    if (option.attributeName() !== key) {
      throw new Error(
        `flag table: '${def.spec}' is read as '${option.attributeName()}', not '${key}'`,
      );
    }
    command.addOption(option);
  }
  return command;
}

/** commander's values of the table's flags, each parsed with its schema. */
export function readFlags<T extends FlagTable>(
  table: T,
  raw: Readonly<Record<string, unknown>>,
): FlagValues<T> {
  const shape: Record<string, z.ZodType> = {};
  for (const [key, def] of Object.entries(table)) shape[key] = def.schema;
  // The values came from commander through the table's own options, so a parse failure
  // is a defect of the table, not of the user's input: it throws as such.
  return z.object(shape).parse(raw) as FlagValues<T>;
}

/** The `--flags` of the table that were given a value other than their default. */
export function givenFlags(table: FlagTable, raw: Readonly<Record<string, unknown>>): string[] {
  const given: string[] = [];
  for (const [key, def] of Object.entries(table)) {
    const value = raw[key];
    const unset =
      value === undefined ||
      value === def.defaultValue ||
      (Array.isArray(value) && value.length === 0);
    if (!unset) given.push(longName(def));
  }
  return given;
}

/** `--memory` of `--memory <size>`, `--interactive` of `-i, --interactive`. */
export function longName(def: FlagDef): string {
  return new Option(def.spec).long ?? def.spec;
}
