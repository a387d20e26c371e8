// The profile's `context` section (AH-LIFE-6/7): when the model context is compacted.
// `compactAt` is a token count, a fraction of the model's context window, or `disabled`.
// The default, 0.8 of the window, leaves a fifth of it for the summarising request's own
// output and the next turn.
import { z } from 'zod';

export const COMPACT_AT_DEFAULT = 0.8;
/** Below this a token threshold would compact on every request of an ordinary run. */
export const MIN_COMPACT_TOKENS = 1024;

const COMPACT_AT_HINT = `a token count (an integer of at least ${MIN_COMPACT_TOKENS}), a fraction of the model's context window (more than 0, less than 1, such as 0.8), or 'disabled'`;

export const CompactAt = z.union(
  [
    z.literal('disabled'),
    z
      .number()
      .refine(
        (n) => (n > 0 && n < 1) || (Number.isInteger(n) && n >= MIN_COMPACT_TOKENS),
        `compactAt must be ${COMPACT_AT_HINT}`,
      ),
  ],
  { error: `compactAt must be ${COMPACT_AT_HINT}` },
);
export type CompactAt = z.infer<typeof CompactAt>;

export const ContextSection = z.strictObject({
  compactAt: CompactAt.default(COMPACT_AT_DEFAULT),
  // The model's context window in tokens, when cfh does not know it (a fraction needs it).
  windowTokens: z.number().int().positive().optional(),
});
export type ContextSection = z.infer<typeof ContextSection>;
