// transcript.jsonl (agent runs): one model message a line, roles kept (AH-INV-3); tool
// results carry `<untrusted-tool-output>`. Its lines are the provider protocol's messages
// as cfh sent and received them, so they carry no version field of their own: a run's
// transcript is read with the schema of its snapshot's version (cfh.snapshot/1).
import { z } from 'zod';

export const ContentBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.strictObject({
    type: z.literal('tool_use'),
    id: z.string(),
    name: z.string(),
    input: z.unknown(),
  }),
  z.strictObject({
    type: z.literal('tool_result'),
    tool_use_id: z.string(),
    content: z.string(),
    is_error: z.boolean(),
  }),
]);
export type ContentBlock = z.infer<typeof ContentBlock>;

export const TranscriptMessage = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.array(ContentBlock),
});
export type TranscriptMessage = z.infer<typeof TranscriptMessage>;
