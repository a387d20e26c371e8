// The chokepoints of a run that holds credentials (host tools, the model gateway's key;
// AH-TOOL-7): what leaves towards the model (every request: system prompt, messages, tool
// definitions) and what leaves towards the evidence (the run directory's events, outputs
// and files, the transcript, governance records) passes the run's scrubber here, whatever
// produced it: a tool's schema, a validation message, a denial reason, a server's error, a
// progress message. Producers scrub before they cut (host-results.ts); this is the net that
// catches what no producer thought of.
import type {
  ContentBlock,
  ModelGateway,
  ModelMessage,
  ModelRequest,
} from '../../model/gateway.js';
import type { Scrubber } from '../../tools/host/scrub.js';

function scrubBlock(block: ContentBlock, s: Scrubber): ContentBlock {
  switch (block.type) {
    case 'text':
      return { ...block, text: s.text(block.text) };
    case 'tool_result':
      return { ...block, content: s.text(block.content) };
    case 'tool_use':
      return { ...block, input: s.value(block.input) };
  }
}

export function scrubMessage(message: ModelMessage, s: Scrubber): ModelMessage {
  return { ...message, content: message.content.map((b) => scrubBlock(b, s)) };
}

/** A tool's schema as the JSON it is sent as, numbers and values split across strings too. */
function scrubSchema(schema: Record<string, unknown>, s: Scrubber): Record<string, unknown> {
  const out = s.value(schema);
  return typeof out === 'object' && out !== null && !Array.isArray(out)
    ? Object.fromEntries(Object.entries(out))
    : {};
}

export function scrubRequest(request: ModelRequest, s: Scrubber): ModelRequest {
  return {
    ...request,
    system: s.text(request.system),
    messages: request.messages.map((m) => scrubMessage(m, s)),
    tools: request.tools.map((t) => ({
      name: t.name,
      description: s.text(t.description),
      input_schema: scrubSchema(t.input_schema, s),
    })),
  };
}

/** The gateway as the run uses it: nothing it is sent carries a credential the run holds. */
export function scrubbingGateway(gateway: ModelGateway, s: Scrubber): ModelGateway {
  if (s.empty) return gateway;
  return {
    adapter: gateway.adapter,
    route: gateway.route,
    model: gateway.model,
    counting: gateway.counting,
    contextWindowTokens: gateway.contextWindowTokens,
    // Counting sends the request too (count_tokens): scrubbed like a completion.
    countInputTokens: (request, signal) =>
      gateway.countInputTokens(scrubRequest(request, s), signal),
    complete: (request, signal) => gateway.complete(scrubRequest(request, s), signal),
  };
}
