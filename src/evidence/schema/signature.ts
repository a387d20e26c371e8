// signature.json (cfh.signature/1): the operator's Ed25519 signature over the terminal
// record, written after run_finished when an operator key is configured (`cfh keys init`).
// It signs the canonical JSON of `signed`: the run id, the terminal event's seq and hash
// (which covers every event and, through artifact_written, every evidence file) and the
// report's digest. A re-hashed log, a re-written report or a cut log no longer match it.
import { z } from 'zod';
import { RunIdString, Sha256Hex } from './common.js';

export const SIGNATURE_SCHEMA = 'cfh.signature/1';

export const SignedTerminal = z.strictObject({
  runId: RunIdString,
  event: z.strictObject({ seq: z.number().int().positive(), hash: Sha256Hex }),
  reportSha256: Sha256Hex,
});
export type SignedTerminal = z.infer<typeof SignedTerminal>;

export const RunSignature = z.strictObject({
  schema: z.literal(SIGNATURE_SCHEMA),
  algorithm: z.literal('ed25519'),
  /** sha256 of the public key's DER (SPKI): which operator key signed. */
  keyFingerprint: Sha256Hex,
  signed: SignedTerminal,
  /** base64 of the Ed25519 signature over canonicalJson(signed). */
  signature: z.string().min(1),
});
export type RunSignature = z.infer<typeof RunSignature>;
