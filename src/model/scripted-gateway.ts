// The `scripted` gateway: replays a file of model turns, deterministically, for
// offline runs, demos and tests. It ignores what it is sent, except that it refuses to run
// past the end of its script and, like a provider, never bills more output than the
// request's max_tokens (a turn scripted past it is cut there: `max_tokens`). Its token count
// of a request is the input its next turn bills, when the script states it. A summarising
// request of context compaction (`purpose: compaction`) is answered from the script's
// `compactions`, in order, apart from its turns: a script need not know when cfh compacts.
// A script cannot know the names of the value handles cfh will show it (they are run-salted),
// so a string `{{handle:N}}` in a tool call's input stands for the N-th distinct handle the
// request's messages hold, as a model would copy one from what it was shown; one it was not
// shown stays as written (and is inert).
import { z } from 'zod';
import { CfhError, ConfigError } from '../errors.js';
import { describeIssues } from '../config/zod-issues.js';
import { parseYamlText, YamlSyntaxError, type ParsedYaml } from '../config/yaml-file.js';
import { INPUT_FILE_LIMITS, readInputFileSync } from '../config/input-file.js';
import type {
  ContentBlock,
  ModelGateway,
  ModelRequest,
  ModelResponse,
  ReportedUsage,
} from './gateway.js';

const Usage = z.strictObject({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  cache_read_input_tokens: z.number().int().nonnegative().optional(),
  cache_creation_input_tokens: z.number().int().nonnegative().optional(),
});

const Turn = z.strictObject({
  text: z.string().optional(),
  tool_calls: z.array(z.strictObject({ name: z.string().min(1), input: z.unknown() })).default([]),
  usage: Usage.optional(),
});

/** One answer to a summarising request: a summary, or a failure of the request. */
const Compaction = z.union([
  z.strictObject({ summary: z.string(), usage: Usage.optional() }),
  z.strictObject({ fail: z.string().min(1) }),
]);

const scriptFields = {
  model: z.string().min(1).default('scripted'),
  /** The scripted model's context window in tokens (a `compactAt` fraction needs one). */
  contextWindow: z.number().int().positive().optional(),
  turns: z.array(Turn).min(1),
  compactions: z.array(Compaction).optional(),
};

/** A child profile's own script: every run of that child replays it from its first turn. */
export const ChildScript = z.strictObject(scriptFields);

export const Script = z.strictObject({
  ...scriptFields,
  /** By child profile name (AH-DEL): a child without one answers with the fallback script. */
  children: z.record(z.string().min(1), ChildScript).optional(),
});
export type Script = z.infer<typeof Script>;

export function loadScript(file: string): Script {
  // Bounded like every input file: a regular file, at most INPUT_FILE_LIMITS.scriptBytes.
  const text = readInputFileSync({
    label: '--script',
    file,
    maxBytes: INPUT_FILE_LIMITS.scriptBytes,
  });
  // Where, never what: the script may be any file (zod-issues.ts, yaml-file.ts).
  let yaml: ParsedYaml;
  try {
    yaml = parseYamlText(text);
  } catch (error) {
    if (!(error instanceof YamlSyntaxError)) throw error;
    throw new ConfigError(
      'invalid_script',
      `--script ${error.in(file)}`,
      { field: 'script', value: file },
      'give a YAML file of scripted turns',
    );
  }
  const parsed = Script.safeParse(yaml.value);
  if (!parsed.success) {
    throw new ConfigError(
      'invalid_script',
      `--script ${file}: ${describeIssues(parsed.error, { schema: Script, locate: yaml.locate })}`,
      { field: 'script', value: file },
    );
  }
  return parsed.data;
}

const SHOWN_HANDLE = /cfh-val:[a-z2-7]{20}/g;
const HANDLE_SLOT = /\{\{handle:([1-9][0-9]{0,3})\}\}/g;

/** The value handles the request's messages hold, in the order they first appear. */
function handlesShown(messages: ModelRequest['messages']): string[] {
  const seen = new Set<string>();
  for (const m of messages)
    for (const block of typeof m.content === 'string' ? [] : m.content) {
      const text =
        block.type === 'tool_result' ? block.content : block.type === 'text' ? block.text : '';
      for (const h of text.match(SHOWN_HANDLE) ?? []) seen.add(h);
    }
  return [...seen];
}

/** The tool_use ids the conversation holds already. */
function toolUseIds(messages: ModelRequest['messages']): Set<string> {
  const ids = new Set<string>();
  for (const m of messages)
    for (const block of typeof m.content === 'string' ? [] : m.content)
      if (block.type === 'tool_use') ids.add(block.id);
  return ids;
}

/** `input` with each `{{handle:N}}` in any string as the N-th handle shown. */
function withHandles(input: unknown, shown: readonly string[]): unknown {
  if (typeof input === 'string')
    return input.replace(HANDLE_SLOT, (slot, n: string) => shown[Number(n) - 1] ?? slot);
  if (Array.isArray(input)) return input.map((v) => withHandles(v, shown));
  if (typeof input === 'object' && input !== null)
    return Object.fromEntries(Object.entries(input).map(([k, v]) => [k, withHandles(v, shown)]));
  return input;
}

/** Only the counters the script states: an absent counter stays absent (AH-USAGE-1). */
function reportedOnly(usage: z.infer<typeof Usage> | undefined): ReportedUsage {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(usage ?? {})) if (value !== undefined) out[key] = value;
  return out;
}

/**
 * The loop asked for a turn past the script's end: the run fails (exit 1), not the model.
 * The scripted provider could not answer: boundary `model-gateway` (AH-DIAG-1).
 */
export class ScriptExhaustedError extends CfhError {
  constructor(turns: number, what = 'turn') {
    super('script_exhausted', `the script has ${turns} ${what}(s) and the loop asked for another`, {
      boundary: 'model-gateway',
      details: what === 'turn' ? { turns } : { [what]: turns },
      exitCode: 1,
    });
  }
}

export class ScriptedGateway implements ModelGateway {
  readonly adapter = 'scripted';
  readonly route: Readonly<Record<string, string>>;
  readonly model: string;
  readonly counting = 'free';
  readonly contextWindowTokens: number | undefined;
  readonly #script: Script;
  #next = 0;
  #nextCompaction = 0;

  readonly #childFallback: Script | undefined;

  /**
   * `childFallback`: what a child profile the script does not name replays (the CLI gives
   * the embedded script); none: such a child's gateway is this script's own replay.
   */
  constructor(script: Script, source: string, childFallback?: Script) {
    this.#script = script;
    this.#childFallback = childFallback;
    this.model = script.model;
    this.contextWindowTokens = script.contextWindow;
    this.route = { provider: 'scripted', source, credential: 'none' };
  }

  /**
   * A fresh replay for one child run: its own turns from the first (AH-DEL-1). The script's
   * `children` go down with it, so a grandchild the script names replays its own turns too.
   */
  forChild(profile: string): ModelGateway {
    const own = this.#script.children?.[profile];
    const children = this.#script.children === undefined ? {} : { children: this.#script.children };
    if (own !== undefined)
      return new ScriptedGateway(
        { ...own, ...children },
        `${this.route.source ?? 'script'}#children.${profile}`,
        this.#childFallback,
      );
    const fallback = this.#childFallback ?? this.#script;
    return new ScriptedGateway(
      { ...fallback, ...children },
      `${this.route.source ?? 'script'}#fallback`,
      this.#childFallback,
    );
  }

  countInputTokens(request: ModelRequest, signal: AbortSignal): Promise<number | undefined> {
    signal.throwIfAborted();
    const usage =
      request.purpose === 'compaction'
        ? this.#compactionUsage()
        : this.#script.turns[this.#next]?.usage;
    if (usage?.input_tokens === undefined) return Promise.resolve(undefined);
    // What the provider would bill as input, every kind (see billedInput in agent-loop.ts).
    return Promise.resolve(
      usage.input_tokens +
        (usage.cache_creation_input_tokens ?? 0) +
        (usage.cache_read_input_tokens ?? 0),
    );
  }

  #compactionUsage(): z.infer<typeof Usage> | undefined {
    const next = (this.#script.compactions ?? [])[this.#nextCompaction];
    return next !== undefined && 'usage' in next ? next.usage : undefined;
  }

  /** A summarising request: the next of the script's `compactions`. */
  #compact(request: ModelRequest): Promise<ModelResponse> {
    const answer = (this.#script.compactions ?? [])[this.#nextCompaction];
    if (answer === undefined)
      return Promise.reject(
        new ScriptExhaustedError(this.#script.compactions?.length ?? 0, 'compaction'),
      );
    this.#nextCompaction += 1;
    if ('fail' in answer)
      return Promise.reject(
        new CfhError('model_request_rejected', `scripted compaction failure: ${answer.fail}`, {
          boundary: 'model-gateway',
          exitCode: 1,
        }),
      );
    const usage = reportedOnly(answer.usage);
    const cut = usage.output_tokens !== undefined && usage.output_tokens > request.maxOutputTokens;
    return Promise.resolve({
      model: this.#script.model,
      content: [{ type: 'text', text: answer.summary }],
      stopReason: cut ? 'max_tokens' : 'end_turn',
      usage: cut ? { ...usage, output_tokens: request.maxOutputTokens } : usage,
      ...(answer.usage === undefined ? { unbilled: true as const } : {}),
    });
  }

  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse> {
    signal.throwIfAborted();
    if (request.purpose === 'compaction') return this.#compact(request);
    const turn = this.#script.turns[this.#next];
    if (turn === undefined)
      return Promise.reject(new ScriptExhaustedError(this.#script.turns.length));
    const index = this.#next;
    this.#next += 1;
    const content: ContentBlock[] = [];
    if (turn.text !== undefined) content.push({ type: 'text', text: turn.text });
    const shown = handlesShown(request.messages);
    const taken = toolUseIds(request.messages);
    turn.tool_calls.forEach((call, i) => {
      // Unique in the conversation, as a provider's are: a restored session replays its
      // script from the first turn over a conversation that holds the first turn's ids.
      let id = `toolu_scripted_${index}_${i}`;
      for (let k = 2; taken.has(id); k += 1) id = `toolu_scripted_${index}_${i}_${k}`;
      content.push({
        type: 'tool_use',
        id,
        name: call.name,
        input: withHandles(call.input, shown),
      });
    });
    const usage = reportedOnly(turn.usage);
    const cut = usage.output_tokens !== undefined && usage.output_tokens > request.maxOutputTokens;
    return Promise.resolve({
      model: this.#script.model,
      content,
      stopReason: cut ? 'max_tokens' : turn.tool_calls.length > 0 ? 'tool_use' : 'end_turn',
      usage: cut ? { ...usage, output_tokens: request.maxOutputTokens } : usage,
      // A turn that states no usage stands for no provider: nothing is billed for it.
      ...(turn.usage === undefined ? { unbilled: true as const } : {}),
    });
  }
}
