// The fences that keep prompt roles apart (AH-INV-3): the caller's direct command, context,
// quoted material and tool output each reach the model inside their own tag. Data must not
// be able to close its fence and open another: text inside a fence has every `<` of a
// fence tag (opening or closing, any case) written as `&lt;`, and tool output is JSON with
// `<` and `>` escaped, so it contains no tag at all.
import { isToolName } from '../../tools/contract.js';

const FENCE_TAGS = [
  'direct-command',
  'context',
  'quoted-material',
  'untrusted-tool-output',
  'compacted-summary',
];
const FENCE_TAG = new RegExp(`<(?=\\s*/?\\s*(?:${FENCE_TAGS.join('|')})\\b)`, 'gi');

export type FenceRole = 'direct-command' | 'context' | 'quoted-material';

/** `text` inside the role's fence; a fence tag in it is written so it cannot act as one. */
export function fence(role: FenceRole, text: string): string {
  return `<${role}>\n${defuseFences(text)}\n</${role}>`;
}

/** `text` with every fence tag's `<` written as `&lt;`: it cannot open or close a fence. */
export function defuseFences(text: string): string {
  return text.replace(FENCE_TAG, '&lt;');
}

/** A tool's observation for the model: JSON without `<` or `>`, fenced as untrusted. */
export function fenceToolOutput(tool: string, observation: unknown): string {
  const json = JSON.stringify(observation).replace(/</g, '\\u003c').replace(/>/g, '\\u003e');
  // The tool name comes from the model; one that is not a tool name is not echoed.
  // Host tools keep their MCP spelling (`-` included): still no quote, space or bracket.
  const name = isToolName(tool) ? tool : 'invalid-name';
  return `<untrusted-tool-output tool="${name}">\n${json}\n</untrusted-tool-output>`;
}
