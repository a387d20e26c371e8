// Primitives the evidence schemas share. Everything a run directory holds is described
// once, with zod, in this folder; writers and readers (runs list/show, audit, report,
// export) use the same definitions, and docs/schema/*.json is generated from them.
import { z } from 'zod';

export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 as 64 lowercase hex digits');
/** `sha256:<hex>`, as the snapshot writes digests of values it does not copy. */
export const PrefixedSha256 = z.string().regex(/^sha256:[0-9a-f]{64}$/);
export const RunIdString = z.string().regex(/^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
export const IsoTime = z.iso.datetime();
export const Count = z.number().int().nonnegative();
export const Milliseconds = z.number().nonnegative();
/** `call-0001`…: a run's tool calls, numbered across turns. */
export const CallId = z.string().regex(/^call-\d{4,}$/);
export const TerminalStatus = z.enum(['completed', 'failed', 'cancelled']);
