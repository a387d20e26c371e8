// The input schemas of the built-in tools: the one definition the mediator checks a
// proposal against (builtins.ts, tool-call-deps.ts checkAgainst) and the audit checks a
// recorded rejection against (evidence/audit/checks-rejections.ts), so a call rejected as
// invalid whose arguments the schema accepts is a rewrite the audit finds. Pure: zod only.
import { z } from 'zod';

const path = z.string().min(1).max(4096);

export const BUILTIN_INPUTS = {
  exec: z.strictObject({
    command: z.array(z.string()).min(1).max(256),
    timeout: z.number().int().min(1).max(86_400).optional(),
  }),
  read_file: z.strictObject({ path }),
  write_file: z.strictObject({ path, content: z.string().max(1_000_000) }),
  edit_file: z.strictObject({ path, old_string: z.string().min(1), new_string: z.string() }),
  list_dir: z.strictObject({ path }),
  grep: z.strictObject({ pattern: z.string().min(1).max(1000), path }),
} as const;
