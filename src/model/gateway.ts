// The model gateway seam: one request, one proposal. What comes back is
// untrusted proposal data (runtime contract, section 1). Usage counters are kept exactly as
// the provider reported them: absent stays absent, never zero (AH-USAGE-1).
export interface ModelMessage {
  readonly role: 'user' | 'assistant';
  readonly content: readonly ContentBlock[];
}

export type ContentBlock =
  | { readonly type: 'text'; readonly text: string }
  | {
      readonly type: 'tool_use';
      readonly id: string;
      readonly name: string;
      readonly input: unknown;
    }
  | {
      readonly type: 'tool_result';
      readonly tool_use_id: string;
      readonly content: string;
      readonly is_error: boolean;
    };

export interface ModelRequest {
  readonly system: string;
  readonly messages: readonly ModelMessage[];
  readonly tools: readonly {
    readonly name: string;
    readonly description: string;
    readonly input_schema: Record<string, unknown>;
  }[];
  readonly maxOutputTokens: number;
  /**
   * `compaction`: a summarising request of context compaction (engine/agent/compaction.ts), not a
   * turn of the run; a scripted gateway answers it from its script's `compactions`.
   */
  readonly purpose?: 'compaction';
}

export interface ReportedUsage {
  readonly input_tokens?: number;
  readonly output_tokens?: number;
  readonly cache_read_input_tokens?: number;
  readonly cache_creation_input_tokens?: number;
}

export interface ModelResponse {
  readonly model: string;
  readonly content: readonly ContentBlock[];
  readonly stopReason: string;
  /** Exactly the counters the provider reported. */
  readonly usage: ReportedUsage;
  /**
   * Nothing was billed for this attempt (a scripted turn that states no usage: no provider
   * took part), so the budgets charge it nothing; otherwise a counter the provider left out
   * is charged at its reservation.
   */
  readonly unbilled?: true;
}

export interface RoutePricing {
  readonly inputPerMTok: number;
  readonly outputPerMTok: number;
}

export interface ModelGateway {
  /** `scripted` or `anthropic`: recorded with every attempt. */
  readonly adapter: string;
  /** Provider route and credential source, by reference only (AH-INV-2). */
  readonly route: Readonly<Record<string, string>>;
  /** The model requested (the provider may answer with a dated snapshot id of it). */
  readonly model: string;
  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResponse>;
  /**
   * The request's input tokens as the provider counts them (AH-LIFE-4: the reservation before
   * a request), or undefined when it cannot say; the loop then keeps its own upper bound.
   */
  countInputTokens(request: ModelRequest, signal: AbortSignal): Promise<number | undefined>;
  /** `free`: asked before every request; `round-trip`: only when the loop's bound is too big. */
  readonly counting: 'free' | 'round-trip';
  /**
   * The prices per million tokens this route's configuration states (a profile's
   * `model.pricing`): its attempts are priced with them (cost.ts rateCardOf); absent: the
   * repository's rate card.
   */
  readonly pricing?: RoutePricing | undefined;
  /** The model's context window in tokens, when the adapter knows it (AH-LIFE-7). */
  readonly contextWindowTokens?: number | undefined;
  /**
   * The gateway a child run of the named child profile talks to (AH-DEL-1: a fresh model
   * context; the same route and credential, chosen once: AH-INV-5). Absent: this one.
   */
  forChild?(profile: string): ModelGateway;
}
