// `--approvals FILE`: exact calls an operator approved ahead of time (docs/operators.md,
// "Approvals"). A YAML list of `{rule, tool, argsDigest}`: each approves one call, the one
// whose policy rule, tool and argument digest are exactly these; a changed argument is a
// changed digest and is not approved. Checked before anything starts: a bad file is a
// configuration error (exit 125).
import { createHash } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { readBoundedFile } from './bounded-file.js';
import { describeIssues } from './zod-issues.js';
import { parseYamlText, YamlSyntaxError, type ParsedYaml } from './yaml-file.js';

/** An approvals file is a short list written by a person: 256 KiB is far beyond one. */
export const APPROVALS_FILE_MAX_BYTES = 256 * 1024;

/** Rule ids as profiles and cfh write them (`rm-needs-approval`, `from_plan`, `default:…`). */
// Upper case too: a contract rule carries its tool's name, and MCP tools keep their spelling.
export const APPROVABLE_RULE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const ApprovalsFile = z
  .array(
    z.strictObject({
      rule: z.string().regex(APPROVABLE_RULE_ID, 'a policy rule id'),
      tool: z.string().min(1).max(200),
      argsDigest: z
        .string()
        .regex(/^sha256:[0-9a-f]{64}$/, 'sha256: and 64 lower-case hex digits (the args digest)'),
    }),
  )
  .max(10_000);
export type ApprovalsFile = z.infer<typeof ApprovalsFile>;

export interface LoadedApprovals {
  /** The file as given, resolved to an absolute path. */
  readonly path: string;
  readonly sha256: string;
  readonly calls: ApprovalsFile;
}

export async function loadApprovalsFile(file: string): Promise<LoadedApprovals> {
  const field = '--approvals';
  const absolute = path.resolve(file);
  const { bytes } = await readBoundedFile(
    absolute,
    APPROVALS_FILE_MAX_BYTES,
    field,
    'invalid_approvals_file',
  );
  // Where, never what: the file may be any file (zod-issues.ts, yaml-file.ts).
  let yaml: ParsedYaml;
  try {
    yaml = parseYamlText(bytes.toString('utf8'), { maxAliasCount: 0 });
  } catch (error) {
    if (!(error instanceof YamlSyntaxError)) throw error;
    throw new ConfigError(
      'invalid_approvals_file',
      `${field} ${error.in(absolute)}`,
      { field, value: absolute },
      'give a YAML list of approved calls',
    );
  }
  const parsed = ApprovalsFile.safeParse(yaml.value);
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_approvals_file',
      `${field} ${absolute}: ${describeIssues(parsed.error, { schema: ApprovalsFile, locate: yaml.locate })}`,
      { field, value: absolute },
    );
  }
  return {
    path: absolute,
    sha256: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    calls: parsed.data,
  };
}
