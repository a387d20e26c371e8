// The seccomp base data in seccomp/: the default-deny allowlist, the ABIs, the denied groups,
// the names allowed only by an argument rule, and the names the engine's own default knows
// (the fact source for "is this a syscall at all").
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { SECCOMP_DIR } from '../paths.js';

const SyscallName = z.string().regex(/^[a-z0-9_]+$/);

const BaseData = z.object({
  schema: z.literal('cfh.seccomp-base/2'),
  architectures: z.array(z.string()).min(1),
  compatArchitectures: z.array(z.string()).min(1),
  allow: z.array(SyscallName).min(1),
});

const DeniedData = z.object({
  schema: z.literal('cfh.seccomp-denied/1'),
  groups: z.object({
    ptrace: z.array(SyscallName),
    ioUring: z.array(SyscallName),
    userNamespaces: z.array(SyscallName),
    always: z.array(SyscallName),
  }),
  conditional: z.record(SyscallName, z.string()),
});

const EngineDefault = z.object({
  syscalls: z.array(z.object({ names: z.array(SyscallName) })),
});

export interface SeccompData {
  readonly baseSchema: string;
  /** The ABI every filter covers (x86_64). */
  readonly architectures: readonly string[];
  /** The 32-bit ABIs (i386, x32), added only with seccomp.allow32BitAbis. */
  readonly compatArchitectures: readonly string[];
  readonly allow: ReadonlySet<string>;
  readonly groups: z.infer<typeof DeniedData>['groups'];
  /** Names allowed only by an argument rule (src/seccomp/argument-rules.ts). */
  readonly conditional: ReadonlySet<string>;
  /** Every syscall name cfh recognises: the engine default's names and the denied lists. */
  readonly known: ReadonlySet<string>;
}

let cached: SeccompData | undefined;

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(path.join(SECCOMP_DIR, file), 'utf8'));
}

export function seccompData(): SeccompData {
  if (cached !== undefined) return cached;
  const base = BaseData.parse(readJson('base.json'));
  const denied = DeniedData.parse(readJson('denied.json'));
  const engine = EngineDefault.parse(readJson('docker-default-20.10.json'));
  const deniedNames = Object.values(denied.groups).flat();
  const conditional = Object.keys(denied.conditional);
  const overlap = [...deniedNames, ...conditional].filter((n) => base.allow.includes(n));
  if (overlap.length > 0) {
    // The data is inconsistent: a denied or argument-ruled syscall would be allowed whole.
    throw new Error(`seccomp/base.json allows denied syscalls: ${overlap.join(', ')}`);
  }
  cached = {
    baseSchema: base.schema,
    architectures: base.architectures,
    compatArchitectures: base.compatArchitectures,
    allow: new Set(base.allow),
    groups: denied.groups,
    conditional: new Set(conditional),
    known: new Set([
      ...engine.syscalls.flatMap((s) => s.names),
      ...deniedNames,
      ...conditional,
      ...base.allow,
    ]),
  };
  return cached;
}
